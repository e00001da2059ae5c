// Registers `router/auto` (as virtual_model_compact_routed) and a `context` handler that logs each
// call with the roles it was given, so the order of routing, compaction and `context` shows.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let contextCalls = 0;
	pi.on("context", (event: any) => {
		contextCalls += 1;
		pi.appendEntry("context", {
			call: contextCalls,
			roles: event.messages.map((m: any) => m.role),
		});
	});
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto Router",
		thinkingLevels: ["off", "low"],
		route: (request: any, ctx: any) => {
			pi.appendEntry("routed", {
				reason: request.reason,
				roles: request.messages.map((m: any) => m.role),
			});
			const id = request.reason === "direct" ? "mock-reasoner" : "mock-small";
			return { model: ctx.modelRegistry.find("mock", id), thinkingLevel: "low" };
		},
	});
}
