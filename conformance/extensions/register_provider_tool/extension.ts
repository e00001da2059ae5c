// Registers a provider from a tool's `execute` (Pi 1.5.2 applies it at once, as from a handler):
// the model calls `connect`, which registers `gateway` (the kit's mock behind it, a literal key
// and a header) and returns what its context's registry then finds; RPC's model lists follow,
// and a prompt after `set_model` goes to the gateway with its header.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

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
	pi.registerTool({
		name: "connect",
		label: "connect",
		description: "Connects the gateway.",
		parameters: Type.Object({}),
		execute: async (_id, _params, _signal, _onUpdate, ctx) => {
			pi.registerProvider("gateway", gateway("tool", "Gateway Model"));
			return { content: [{ type: "text", text: JSON.stringify(seen(ctx)) }], details: {} };
		},
	});
}
