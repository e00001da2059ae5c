// Registers `late`, a provider with a chat model and a classifier (and its implementation),
// once the run starts (`before_agent_start`, after loading), and unregisters it when the first
// codemode call's result arrives: the scripts see the typed catalog as it is at their call.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const cost = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 };
	pi.on("before_agent_start", async () => {
		pi.registerProvider("late", {
			baseUrl: models.providers.mock.baseUrl,
			api: "openai-completions",
			apiKey: "late-key",
			models: [
				{ id: "late-chat", name: "Late Chat", reasoning: false, input: ["text"], cost, contextWindow: 1000, maxTokens: 100 },
				{ id: "late-cls", name: "Late Classifier", type: "classifier", api: "late-classify", input: ["text"], cost, contextWindow: 500 },
			],
			classifiers: {
				"late-classify": {
					async classify(model, context) {
						const answers = Object.fromEntries(Object.keys(context.questions).map((id) => [id, { label: "late" }]));
						return { api: model.api, provider: model.provider, model: model.id, answers, stopReason: "stop", timestamp: 0 };
					},
				},
			},
		} as any);
	});
	pi.on("tool_result", async (event) => {
		if (event.toolCallId === "c1") pi.unregisterProvider("late");
	});
}
