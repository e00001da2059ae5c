// Registers `router/auto`, which logs the reason of each request, and a command that sends a
// custom message triggering a turn: after a response, a request whose new messages are only
// an extension's is a continuation in Pi 1.5.2, not the user's turn.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto Router",
		route: (request: any, ctx: any) => {
			pi.appendEntry("routed", {
				reason: request.reason,
				roles: request.messages.map((m: any) => m.role),
			});
			return { model: ctx.modelRegistry.find("mock", "mock-model") };
		},
	});
	pi.registerCommand("nudge", {
		description: "sends a custom message that starts a turn",
		handler: async () => {
			pi.sendMessage({ customType: "nudge", content: "Nudge.", display: true }, { triggerTurn: true });
		},
	});
}
