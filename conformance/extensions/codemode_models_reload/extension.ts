// `/add` registers `later` (a chat and a classifier model) after loading, `/again` reloads
// the extensions; the scripts list what the registry holds before and after the reload.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	pi.registerCommand("add", {
		description: "registers a provider after loading",
		handler: async (_args, ctx) => {
			pi.registerProvider("later", {
				baseUrl: models.providers.mock.baseUrl,
				api: "openai-completions",
				apiKey: "later-key",
				models: [
					{ id: "later-chat", name: "Later Chat", reasoning: false, input: ["text"], cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 },
					{ id: "later-cls", name: "Later Classifier", type: "classifier", api: "later-classify", input: ["text"] },
				],
			} as any);
			ctx.ui.notify("added", "info");
		},
	});
	pi.registerCommand("again", {
		description: "reloads",
		handler: async (_args, ctx) => {
			await ctx.reload();
		},
	});
}
