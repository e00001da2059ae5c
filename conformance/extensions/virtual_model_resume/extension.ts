// Registers `router/auto`, which sends every request to the mock's model. A resumed session
// whose last model change selected it keeps it: its next prompt is routed again, the router
// finding the state it stored on the branch.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto Router",
		route: (request: any, ctx: any) => ({
			model: ctx.modelRegistry.find("mock", "mock-model"),
			thinkingLevel: "off",
			state: { routed: (request.state?.routed ?? 0) + 1 },
		}),
	});
	pi.on("session_start", async (event, ctx) => {
		pi.appendEntry("started", { reason: event.reason, model: ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : null });
	});
}
