// Registers `router/auto`, which sends the agent's requests to the mock's model and a request
// outside the agent loop (a branch summary) to its reasoner, logging each reason, state and
// roles it was given in an entry; `/back` navigates the tree to the first answer with a summary
// the model writes.
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
	pi.registerCommand("back", {
		description: "Go back to the first answer, with a summary",
		handler: async (_args, ctx) => {
			const answer = ctx.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "assistant");
			const result = await ctx.navigateTree(answer.id, { summarize: true });
			pi.appendEntry("navigated", { cancelled: result.cancelled });
		},
	});
}
