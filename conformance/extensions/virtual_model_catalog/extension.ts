// Registers two virtual models while loading: `router/auto` (a provider of only virtual models,
// with thinking levels and limits) and `mock/smart` (beside the mock's physical models). A
// command appends what ctx.modelRegistry and ctx.model see of them.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const route = (request: any, ctx: any) => ({
		model: ctx.modelRegistry.find("mock", "mock-model"),
		thinkingLevel: request.thinkingLevel,
	});
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto Router",
		thinkingLevels: ["off", "low", "high"],
		contextWindow: 100000,
		maxTokens: 8000,
		route,
	});
	pi.registerVirtualModel({ provider: "mock", id: "smart", name: "Smart Mock", input: ["text"], route });
	pi.registerCommand("seen", {
		description: "append what the registry sees",
		handler: async (_args, ctx) => {
			const auto = ctx.modelRegistry.find("router", "auto");
			pi.appendEntry("seen", {
				model: ctx.model ? `${ctx.model.provider}/${ctx.model.id}/${ctx.model.api}` : null,
				auto: auto ?? null,
				available: ctx.modelRegistry.getAvailable().map((m) => `${m.provider}/${m.id}`),
				all: ctx.modelRegistry.getAll().map((m) => `${m.provider}/${m.id}`),
			});
		},
	});
}
