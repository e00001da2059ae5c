// Registers a virtual model routing each request to the mock's model, and a `context` handler
// that adds a note to each request's conversation; both log their calls in entries, so the
// order of routing and `context` shows.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let calls = 0;
	pi.on("context", (event: any) => {
		calls += 1;
		pi.appendEntry("context", { call: calls });
		return {
			messages: [
				...event.messages,
				{ role: "user", content: [{ type: "text", text: `note ${calls}` }], timestamp: 0 },
			],
		};
	});
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto",
		thinkingLevels: ["off", "high"],
		contextWindow: 100000,
		maxTokens: 8000,
		route: (request: any, ctx: any) => {
			pi.appendEntry("routed", { reason: request.reason, messages: request.messages.length });
			return { model: ctx.modelRegistry.find("mock", "mock-model")!, thinkingLevel: "off" };
		},
	});
}
