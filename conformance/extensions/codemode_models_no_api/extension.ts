// Registers `typed`, a provider whose classifier model names no api (its provider names one):
// Pi refuses the whole registration, failing the load. The RPC run loads `later.ts` instead.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const cost = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 };
	pi.registerProvider("typed", {
		baseUrl: models.providers.mock.baseUrl,
		api: "openai-completions",
		apiKey: "typed-key",
		models: [
			{ id: "typed-chat", name: "Typed Chat", reasoning: false, input: ["text"], cost, contextWindow: 1000, maxTokens: 100 },
			{ id: "typed-cls", name: "Typed Classifier", type: "classifier", input: ["text"], cost, contextWindow: 2000 },
		],
	} as any);
}
