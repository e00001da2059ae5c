// Registers a virtual model from a handler, once the extensions have loaded (Pi 1.5.2 routes
// each request of it; this harness says it does not).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("turn_end", async () => {
		pi.registerVirtualModel({
			provider: "router",
			id: "auto",
			name: "Auto",
			route: () => ({ model: { provider: "mock", id: "mock-model" } }),
		} as never);
	});
}
