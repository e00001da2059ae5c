// Writes the original's built-in model catalog (pi-ai) as JSON (providers/src/catalog/models.json).
//
//   node scripts/gen-model-catalog.mjs <pi install dir> <out file>
//
// The install dir is the one conformance/install-pi-1.5.2.sh creates. 1.5.2 ships pi-ai inside
// its esbuild bundle, so the catalog is read through the functions pi-ai exports there
// (`getProviders`, `getModels`), from whichever bundle chunk exports them (chunk names change
// with every build). Providers and models keep the order those functions give.
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
