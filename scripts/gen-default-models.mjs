// Writes Pi 1.5.2's default model per provider (providers/src/catalog/default_models.json): the
// model a provider starts with when nothing names one (`defaultModelPerProvider`), in its order.
//
//   node scripts/gen-default-models.mjs <pi install dir> <out file>
//
// The install dir is the one conformance/install-pi-1.5.2.sh creates. `core/model-resolver.js`
// imports pi-ai, which 1.5.2 ships only inside its bundle, so the module cannot be imported on
// its own: the object literal is read from its source and evaluated by itself.
import fs from "fs";
import path from "path";

const [piDir, out] = process.argv.slice(2);
if (!piDir || !out) {
  console.error("usage: node scripts/gen-default-models.mjs <pi install dir> <out file>");
  process.exit(2);
}
const resolver = path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist/core/model-resolver.js");
const source = fs.readFileSync(resolver, "utf8");
const literal = /export const defaultModelPerProvider = (\{[^}]*\});/.exec(source);
if (!literal) {
  console.error(`no defaultModelPerProvider literal in ${resolver}`);
  process.exit(1);
}
const defaults = new Function(`return ${literal[1]};`)();
const pairs = Object.entries(defaults);
fs.writeFileSync(out, JSON.stringify(pairs, null, 1) + "\n");
console.log(`${pairs.length} default models -> ${out}`);
