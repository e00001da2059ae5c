// Registers model providers while loading, as a gateway extension does: `gateway`, a provider of
// its own (the kit's mock behind it, found through the agent dir's models.json) with a literal
// key, a header and one model; `mock-anthropic`, a built-in-like provider whose baseUrl alone is
// overridden (its models kept); and `dropped`, registered then unregistered. The run selects
// the gateway's model with --provider/--model, lists the available models over RPC and prompts.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const mock = models.providers.mock.baseUrl as string;
	pi.registerProvider("gateway", {
		baseUrl: mock,
		api: "openai-completions",
		apiKey: "gw-literal-key-0123456789",
		headers: { "x-gateway": "conformance" },
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
	pi.registerProvider("mock-anthropic", { baseUrl: models.providers["mock-anthropic"].baseUrl + "/" });
	pi.registerProvider("dropped", {
		baseUrl: mock,
		api: "openai-completions",
		apiKey: "dropped-key",
		models: [{ id: "dropped-model", name: "Dropped", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 }],
	});
	pi.unregisterProvider("dropped");
}
