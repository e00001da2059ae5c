// Registers `router/auto`, which sends the agent's requests to a mock model with a small context
// window and a request outside the agent loop (a compaction's summary) to the mock's reasoner,
// logging each reason it was given in an entry.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
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
