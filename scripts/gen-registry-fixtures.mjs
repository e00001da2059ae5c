// Writes what the original's ModelRegistry makes of a set of models.json /
// auth.json / environment cases, plus the models.json JSON schema it validates against.
//
//   node scripts/gen-registry-fixtures.mjs <pi install dir> <out dir>
//
// The schema constants are not exported by the original, so they are evaluated from the
// installed model-registry.js with the original TypeBox and written next to the Rust registry. Every case runs in this one process with
// the environment set to exactly the case's variables (the real environment is cleared of
// provider keys first).
import fs from "fs";
import os from "os";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, outDir] = process.argv.slice(2);
// Pi 1.5.2 reads models.json in ModelRuntime (model-config.js holds its schema); ModelRegistry is
// the synchronous view of a runtime. PI_OFFLINE keeps the catalog to the built-in one.
process.env.PI_OFFLINE = "1";
const pi = original(piDir);
const { ModelRuntime } = await pi.bundled("ModelRuntime");
const { ModelRegistry } = await pi.bundled("ModelRegistry");
const { AuthStorage } = await pi.bundled("AuthStorage");
const { ModelsConfigSchema: schema } = await pi.agentModule("core/model-config.js");
const schemaOut = new URL("../providers/src/registry/models-config.schema.json", import.meta.url);
fs.writeFileSync(schemaOut, JSON.stringify(schema, null, 1) + "\n");

const cases = JSON.parse(fs.readFileSync(path.join(outDir, "cases.json"), "utf8"));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "registry-"));
const KEY_VARS = Object.keys(process.env).filter((k) => /_(API_KEY|TOKEN)$|^AWS_|^GOOGLE_/.test(k));
const results = [];
for (const c of cases) {
  for (const k of KEY_VARS) delete process.env[k];
  const setEnv = c.env ?? {};
  for (const [k, v] of Object.entries(setEnv)) process.env[k] = v;
  const modelsPath = path.join(tmp, `${c.name}.models.json`);
  if (c.modelsJson !== undefined) fs.writeFileSync(modelsPath, c.modelsJson);
  const runtime = await ModelRuntime.create({
    credentials: AuthStorage.inMemory(c.auth ?? {}),
    modelsPath,
    modelsStorePath: path.join(tmp, `${c.name}.models-store.json`),
  });
  for (const [provider, key] of Object.entries(c.runtimeKeys ?? {})) await runtime.setRuntimeApiKey(provider, key);
  const registry = new ModelRegistry(runtime);
  const error = registry.getError();
  const providers = new Set(c.listProviders ?? []);
  const models = registry.getAll().filter((m) => providers.has(m.provider));
  const available = new Set(registry.getAvailable().map((m) => `${m.provider}/${m.id}`));
  const requests = [];
  for (const [provider, id] of c.probe ?? []) {
    const model = registry.find(provider, id);
    if (!model) {
      requests.push({ model: `${provider}/${id}`, found: false });
      continue;
    }
    const auth = await registry.getApiKeyAndHeaders(model);
    requests.push({ model: `${provider}/${id}`, found: true, available: available.has(`${provider}/${id}`), auth });
  }
  results.push({ name: c.name, error: error?.split(modelsPath).join("<models.json>"), models, requests });
  for (const k of Object.keys(setEnv)) delete process.env[k];
}
fs.rmSync(tmp, { recursive: true, force: true });
fs.writeFileSync(path.join(outDir, "expected.json"), JSON.stringify(results, null, 1) + "\n");
console.log(`${results.length} cases -> ${outDir}`);
