// Provider hooks that throw: the error is reported as for any handler and the request goes on,
// with what the handlers that did not throw decided.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("before_provider_headers", () => {
		throw new Error("headers refused");
	});
	pi.on("before_provider_request", () => {
		throw new Error("body refused");
	});
	pi.on("before_provider_request", (event) => {
		return { ...(event.payload as Record<string, unknown>), metadata: { kept: true } };
	});
}
