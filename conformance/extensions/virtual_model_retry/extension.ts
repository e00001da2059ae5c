// Registers `router/auto`, which sends a user's turn to the mock's model and an automatic
// retry to its reasoner, logging in its state what each request told it (the failed request
// of a retry among them).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto Router",
		route: (request: any, ctx: any) => {
			const seen = {
				reason: request.reason,
				failed: request.failed
					? {
							model: `${request.failed.model.provider}/${request.failed.model.id}`,
							thinkingLevel: request.failed.thinkingLevel ?? null,
							stopReason: request.failed.message.stopReason,
							errorMessage: request.failed.message.errorMessage,
						}
					: null,
				roles: request.messages.map((m: any) => m.role),
			};
			const id = request.reason === "retry" ? "mock-reasoner" : "mock-model";
			return {
				model: ctx.modelRegistry.find("mock", id),
				thinkingLevel: "off",
				state: { log: [...(request.state?.log ?? []), seen] },
			};
		},
	});
}
