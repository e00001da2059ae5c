// Writes pi-ai 0.73.1's built-in model catalog as JSON (providers/src/catalog/models.json).
//
//   node scripts/gen-model-catalog.mjs <pi install dir> <out file>
//
// The install dir is the one the oracle kit's install-pi.sh creates. Providers and models keep
// the catalog's order.
import fs from "fs";
import path from "path";

const [piDir, out] = process.argv.slice(2);
const { MODELS } = await import(path.join(piDir, "node_modules/@mariozechner/pi-ai/dist/models.generated.js"));
fs.writeFileSync(out, JSON.stringify(MODELS) + "\n");
const count = Object.values(MODELS).reduce((n, models) => n + Object.keys(models).length, 0);
console.log(`${Object.keys(MODELS).length} providers, ${count} models -> ${out}`);
