// Writes the original's built-in model catalog (pi-ai) as JSON (providers/src/catalog/models.json),
// and beside it its models of other types than chat (typed_models.json: classifiers, image
// models), which no chat list shows and codemode's `models.*` reads.
//
//   node scripts/gen-model-catalog.mjs <pi install dir> <out file>
//
// The install dir is the one conformance/install-pi-1.5.2.sh creates. 1.5.2 ships pi-ai inside
// its esbuild bundle, so the catalog is read through the functions pi-ai exports there
// (`getProviders`, `getModels`), from whichever bundle chunk exports them (chunk names change
// with every build). Providers and models keep the order those functions give.
import fs from "fs";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const pi = original(piDir);
const { getProviders, getModels } = await pi.bundled("getProviders", "getModels");
const MODELS = Object.fromEntries(
  getProviders().map((provider) => [provider, Object.fromEntries(getModels(provider).map((m) => [m.id, m]))]),
);
fs.writeFileSync(out, JSON.stringify(MODELS) + "\n");
const count = Object.values(MODELS).reduce((n, models) => n + Object.keys(models).length, 0);
console.log(`${Object.keys(MODELS).length} providers, ${count} models -> ${out}`);

// The built-in providers' models of other types, in the providers' order (pi-ai's
// `providers/all`, whose providers list every type through `getAllModels`).
const { all_exports } = await pi.bundled("all_exports");
const typed = all_exports
  .builtinProviders()
  .flatMap((provider) => provider.getAllModels?.() ?? [])
  .filter((model) => (model.type ?? "chat") !== "chat");
const typedOut = path.join(path.dirname(out), "typed_models.json");
fs.writeFileSync(typedOut, JSON.stringify(typed) + "\n");
console.log(`${typed.length} models of other types -> ${typedOut}`);
