// Registers `late`, a provider with a classifier, when the first codemode call's result
// arrives (after loading): the next script sees it; a new session's registry is built afresh
// from what loading registered, so a script there does not.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const cost = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 };
	pi.on("tool_result", async (event) => {
		if (event.toolCallId !== "c1") return;
		pi.registerProvider("late", {
			baseUrl: models.providers.mock.baseUrl,
			api: "openai-completions",
			apiKey: "late-key",
			models: [{ id: "late-cls", name: "Late Classifier", type: "classifier", api: "late-classify", input: ["text"], cost, contextWindow: 500 }],
		} as any);
	});
}
