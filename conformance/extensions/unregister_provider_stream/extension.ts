// Registers a provider while loading (the kit's mock behind it, a literal key) and unregisters
// it in `before_agent_start`, after the prompt was accepted for its model: the request then
// finds no provider for the model in force, and the turn ends with that error.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	pi.registerProvider("gateway", {
		baseUrl: models.providers.mock.baseUrl,
		api: "openai-completions",
		apiKey: "gw-load-key-0123456789",
		models: [
			{
				id: "gw-model",
				name: "Gateway Model",
				reasoning: false,
				input: ["text"],
				cost: { input: 3, output: 4, cacheRead: 0, cacheWrite: 0 },
				contextWindow: 64000,
				maxTokens: 4096,
			},
		],
	});
	pi.on("before_agent_start", () => {
		pi.unregisterProvider("gateway");
	});
}
