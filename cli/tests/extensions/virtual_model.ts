// Registers a virtual model (Pi 1.5's `pi.registerVirtualModel`) under a provider of only
// virtual models; it routes each request to the mock's model, counting the requests (and their
// reasons) in its state.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto",
		thinkingLevels: ["off", "high"],
		contextWindow: 100000,
		maxTokens: 8000,
		route: (request, ctx) => ({
			model: ctx.modelRegistry.find("mock", "mock-model")!,
			thinkingLevel: request.thinkingLevel,
			state: { routed: [...(request.state?.routed ?? []), request.reason] },
		}),
	});
}
