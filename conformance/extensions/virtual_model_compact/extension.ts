// Registers `router/auto`, which sends the agent's requests to the mock's model and a request
// outside the agent loop (a compaction's summary) to its reasoner, logging each reason and
// state it was given in an entry.
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
				thinkingLevel: request.thinkingLevel,
				state: request.state ?? null,
				roles: request.messages.map((m: any) => m.role),
			});
			const id = request.reason === "direct" ? "mock-reasoner" : "mock-model";
			return { model: ctx.modelRegistry.find("mock", id), thinkingLevel: "low", state: { n: 1 } };
		},
	});
}
