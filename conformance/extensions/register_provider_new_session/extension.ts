// Registers a provider after loading (`/gw`, as in register_provider_runtime), then starts a
// new session (`/fresh`): Pi 1.5.2 builds the new session's runtime afresh, so the provider is
// gone from its model lists and from its context's registry, which `/look` notes; `/drop`
// there unregisters it again.
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
	pi.registerCommand("fresh", {
		description: "start a new session",
		handler: async (_args, ctx) => {
			await ctx.newSession();
		},
	});
	pi.registerCommand("look", {
		description: "note what the registry has",
		handler: async (_args, ctx) => {
			pi.appendEntry("look", seen(ctx));
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
