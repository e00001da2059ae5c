// Changes what goes to the provider: a header added to the ones Pi gives the handlers, and a
// field added to each request body, with an entry saying which headers the handler saw.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("before_provider_headers", (event) => {
		pi.appendEntry("headers", { names: Object.keys(event.headers).sort() });
		event.headers["x-gate"] = "hooked";
	});
	pi.on("before_provider_request", (event) => {
		const payload = event.payload as Record<string, unknown>;
		return { ...payload, metadata: { turn: (payload.messages as unknown[]).length } };
	});
}
