// Listens to an Anthropic answer: the response's status and header names, then each stream
// event as the provider's reader hands it over, every one written as an entry.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("after_provider_response", (event) => {
		pi.appendEntry("response", { status: event.status, names: Object.keys(event.headers) });
	});
	pi.on("provider_stream_event", (event) => {
		pi.appendEntry("stream", { data: event.data, provider: event.provider, api: event.api, model: event.model });
	});
}
