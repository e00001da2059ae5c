// Registers `router/auto` from a session_start handler, once the extensions have loaded: the
// catalog gains it, a model change can select it, and its router routes each request to the
// mock's model, logging the reason it was given in an entry.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_start", async () => {
		pi.registerVirtualModel({
			provider: "router",
			id: "auto",
			name: "Late Router",
			thinkingLevels: ["off", "low"],
			route: (request: any, ctx: any) => {
				pi.appendEntry("routed", { reason: request.reason });
				return { model: ctx.modelRegistry.find("mock", "mock-model"), thinkingLevel: "low" };
			},
		});
	});
	pi.registerCommand("models", {
		description: "tells whether the registry holds the late virtual model",
		handler: async (_args, ctx) => {
			const found = ctx.modelRegistry.find("router", "auto");
			pi.appendEntry("found", { name: found?.name ?? null, api: found?.api ?? null });
		},
	});
}
