// Registers `router/auto`, a virtual model whose router sends a user's turn to the mock's
// model and every other request to its reasoner, and keeps a log of what it was asked as its
// state (with what its context reads of the session): a new state after the first two
// requests, the state it was given after the third.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto Router",
		thinkingLevels: ["off", "low", "high"],
		route: (request: any, ctx: any) => {
			const log = request.state?.log ?? [];
			const seen = {
				reason: request.reason,
				model: `${request.model.provider}/${request.model.id}`,
				thinkingLevel: request.thinkingLevel,
				previous: request.previous ? `${request.previous.model.id}/${request.previous.thinkingLevel}` : null,
				failed: request.failed ? request.failed.message.stopReason : null,
				roles: request.messages.map((m: any) => m.role),
				ctxModel: ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : null,
				branch: ctx.sessionManager.getBranch().map((e: any) => e.type),
			};
			const id = request.reason === "user" ? "mock-model" : "mock-reasoner";
			const state = log.length < 2 ? { log: [...log, seen] } : request.state;
			return { model: ctx.modelRegistry.find("mock", id), thinkingLevel: "high", state };
		},
	});
}
