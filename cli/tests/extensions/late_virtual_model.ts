// Registers a virtual model from a session_start handler, once the extensions have loaded, and
// selects it: Pi 1.5.2's catalog gains it, and each request of the run is routed by its router.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_start", async (_event, ctx) => {
		pi.registerVirtualModel({
			provider: "router",
			id: "late",
			name: "Late",
			route: (request: any, routeCtx: any) => {
				pi.appendEntry("late-routed", { reason: request.reason });
				return { model: routeCtx.modelRegistry.find("mock", "mock-reasoner"), thinkingLevel: "off" };
			},
		} as never);
		await pi.setModel(ctx.modelRegistry.find("router", "late") as never);
	});
}
