// Writes the original's built-in model catalog (pi-ai) as JSON (providers/src/catalog/models.json).
//
//   node scripts/gen-model-catalog.mjs <pi install dir> <out file>
//
// The install dir is the one the oracle kit's install-pi.sh creates. Providers and models keep
// the catalog's order.
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { getProviders, getModels } = await original(piDir).bundled("getProviders", "getModels");
const MODELS = Object.fromEntries(
  getProviders().map((provider) => [provider, Object.fromEntries(getModels(provider).map((m) => [m.id, m]))]),
);
fs.writeFileSync(out, JSON.stringify(MODELS) + "\n");
const count = Object.values(MODELS).reduce((n, models) => n + Object.keys(models).length, 0);
console.log(`${Object.keys(MODELS).length} providers, ${count} models -> ${out}`);
