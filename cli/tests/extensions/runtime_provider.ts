// Registers a provider from a command once the extensions have loaded, as a gateway whose
// endpoint is only known at run time does: `/gw` registers `gateway` (the test's mock behind it,
// found through the agent dir's models.json) with a key written literally and a header holding
// another, and sets its model (`/gw stay` keeps the model in force); `/drop` unregisters it.
// The tool `connect` registers it from its `execute`, keeping the model in force.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const register = () =>
		pi.registerProvider("gateway", {
			baseUrl: models.providers.mock.baseUrl,
			api: "openai-completions",
			apiKey: "gw-runtime-planted-0123456789abcdef",
			headers: { "x-gateway": "runtime", "x-api-key": "hdr-runtime-planted-0123456789abcdef" },
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
	pi.registerCommand("gw", {
		description: "register the gateway and use it",
		handler: async (args, ctx) => {
			register();
			if (args.trim() === "stay") return;
			const target = ctx.modelRegistry.find("gateway", "gw-model");
			const changed = target ? await pi.setModel(target) : "not found";
			pi.appendEntry("gw", { changed, model: ctx.model?.id });
		},
	});
	pi.registerTool({
		name: "connect",
		label: "connect",
		description: "Connects the gateway.",
		parameters: Type.Object({}),
		execute: async () => {
			register();
			return { content: [{ type: "text", text: "connected" }], details: {} };
		},
	});
	pi.registerCommand("drop", {
		description: "unregister the gateway",
		handler: async () => {
			pi.unregisterProvider("gateway");
		},
	});
}
