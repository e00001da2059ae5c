// Registers a provider after loading, as a gateway extension whose endpoint is only known at
// run time does. `/gw` registers `gateway` (the kit's mock behind it, a literal key and a
// header), finds its model in ctx.modelRegistry and sets it with pi.setModel: the next prompt
// goes there. `/regw` registers `gateway` again with another header and model name: the
// current model is refreshed from the registry, and the next request carries the new header.
// `/drop` unregisters it: the registry no longer lists it, and the next prompt still asks the
// model in force. Each command appends what it saw.
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
	pi.registerCommand("regw", {
		description: "register the gateway again",
		handler: async (_args, ctx) => {
			pi.registerProvider("gateway", gateway("second", "Gateway Model Two"));
			pi.appendEntry("regw", seen(ctx));
		},
	});
	pi.registerCommand("drop", {
		description: "unregister the gateway",
		handler: async (_args, ctx) => {
			pi.unregisterProvider("gateway");
			pi.appendEntry("drop", seen(ctx));
		},
	});
}
