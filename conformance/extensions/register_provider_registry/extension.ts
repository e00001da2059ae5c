// Changes providers through `ctx.modelRegistry` (Pi 1.5.2's `ModelRegistry.registerProvider`
// and `unregisterProvider`), which change the registry without refreshing the session's model:
// `/gw` registers `gateway` through pi.registerProvider and sets its model; `/rename` registers
// it again through ctx.modelRegistry with another model name (the model in force keeps its
// name); `/drop` unregisters it through ctx.modelRegistry. Each command appends what it saw.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const gateway = (header: string, name: string) => ({
		baseUrl: models.providers.mock.baseUrl,
		api: "openai-completions" as const,
		apiKey: "gw-runtime-key-0123456789",
		headers: { "x-gateway": header },
		models: [
			{
				id: "gw-model",
				name,
				reasoning: false,
				input: ["text" as const],
				cost: { input: 3, output: 4, cacheRead: 0, cacheWrite: 0 },
				contextWindow: 64000,
				maxTokens: 4096,
			},
		],
	});
	const seen = (ctx: any) => ({
		model: ctx.model ? `${ctx.model.provider}/${ctx.model.id}/${ctx.model.name}` : null,
		available: ctx.modelRegistry.getAvailable().map((m: any) => `${m.provider}/${m.id}`),
		found: ctx.modelRegistry.find("gateway", "gw-model")?.name ?? null,
	});
	pi.registerCommand("gw", {
		description: "register the gateway and use it",
		handler: async (_args, ctx) => {
			pi.registerProvider("gateway", gateway("first", "Gateway Model"));
			const target = ctx.modelRegistry.find("gateway", "gw-model");
			const changed = target ? await pi.setModel(target) : "not found";
			pi.appendEntry("gw", { changed, ...seen(ctx) });
		},
	});
	pi.registerCommand("rename", {
		description: "register the gateway again through the registry",
		handler: async (_args, ctx) => {
			ctx.modelRegistry.registerProvider("gateway", gateway("second", "Renamed Model"));
			pi.appendEntry("rename", seen(ctx));
		},
	});
	pi.registerCommand("drop", {
		description: "unregister the gateway through the registry",
		handler: async (_args, ctx) => {
			ctx.modelRegistry.unregisterProvider("gateway");
			pi.appendEntry("drop", seen(ctx));
		},
	});
}
