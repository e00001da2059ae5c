// Writes Pi 1.5.2's built-in model catalog as JSON (providers/src/catalog/models.json).
//
//   node scripts/gen-model-catalog.mjs <pi install dir> <out file>
//
// The install dir is the one conformance/install-pi-1.5.2.sh creates. 1.5.2 ships pi-ai inside
// its esbuild bundle, so the catalog is read through the functions pi-ai exports there
// (`getProviders`, `getModels`), from whichever bundle chunk exports them (chunk names change
// with every build). Providers and models keep the order those functions give.
import fs from "fs";
import path from "path";
import { pathToFileURL } from "url";

const [piDir, out] = process.argv.slice(2);
if (!piDir || !out) {
  console.error("usage: node scripts/gen-model-catalog.mjs <pi install dir> <out file>");
  process.exit(2);
}
const chunks = path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/chunks");
const exporter = fs
  .readdirSync(chunks)
  .filter((name) => name.endsWith(".js"))
  .sort()
  .find((name) => {
    const text = fs.readFileSync(path.join(chunks, name), "utf8");
    return /export\{[^}]*\bgetProviders\b[^}]*\}/.test(text) && /export\{[^}]*\bgetModels\b[^}]*\}/.test(text);
  });
if (!exporter) {
  console.error(`no chunk in ${chunks} exports getProviders and getModels`);
  process.exit(1);
}
const { getProviders, getModels } = await import(pathToFileURL(path.join(chunks, exporter)).href);
const MODELS = {};
for (const provider of getProviders()) {
  MODELS[provider] = {};
  for (const model of getModels(provider)) MODELS[provider][model.id] = model;
}
fs.writeFileSync(out, JSON.stringify(MODELS) + "\n");
const count = Object.values(MODELS).reduce((n, models) => n + Object.keys(models).length, 0);
console.log(`${Object.keys(MODELS).length} providers, ${count} models (from ${exporter}) -> ${out}`);
