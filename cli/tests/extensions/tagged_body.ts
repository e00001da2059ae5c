// Tags each request body with the caller's token (`before_provider_request`), a field the
// user's `redact.jsonPaths` rule names: it must reach no cassette line.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("before_provider_request", (event) => {
		const payload = event.payload as Record<string, unknown>;
		return { ...payload, metadata: { token: "t0k" } };
	});
}
