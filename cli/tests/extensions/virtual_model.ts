// Registers a virtual model (Pi 1.5's `pi.registerVirtualModel`), which routes each request
// to a physical model: not run by this harness yet, so it must say so.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerVirtualModel({
		provider: "router",
		id: "auto",
		name: "Auto",
		route: () => ({ model: { provider: "mock", id: "mock-model" } }),
	} as never);
}
