// Hands the provider a key of its own (a gateway's, in `before_provider_headers`) and listens
// to the provider's answer, whose headers set a session cookie: neither value may reach a
// cassette, and the run must still replay.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("before_provider_headers", (event) => {
		event.headers["x-api-key"] = "gw-planted-key-0123456789";
		event.headers["authorization"] = "Bearer gw";
	});
	pi.on("after_provider_response", (event) => {
		pi.appendEntry("response", { status: event.status });
	});
}
