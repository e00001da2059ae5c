// Registers `router/auto`, whose router fails in each way Pi 1.5.2 names before it works:
// the first request it throws, the second it names a model the catalog lacks, the third a
// physical model without credentials, the fourth it names a virtual model; the fifth goes to
// the mock's model.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let calls = 0;
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto Router",
		route: (request: any, ctx: any) => {
			calls += 1;
			if (calls === 1) throw new Error("router is down");
			if (calls === 2) return { model: { provider: "mock", id: "missing" }, thinkingLevel: "off" };
			if (calls === 3) return { model: ctx.modelRegistry.find("anthropic", "claude-opus-4-5"), thinkingLevel: "off" };
			if (calls === 4) return { model: request.model, thinkingLevel: "off" };
			return { model: ctx.modelRegistry.find("mock", "mock-model"), thinkingLevel: "off" };
		},
	});
}
