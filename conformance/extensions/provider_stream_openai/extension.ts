// Listens to a Chat Completions answer: the response's status and header names, then each
// stream chunk as the provider's SDK hands it over (its `created` time only said to be a
// number, as it changes from run to run), every one written as an entry.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("after_provider_response", (event) => {
		pi.appendEntry("response", { status: event.status, names: Object.keys(event.headers) });
	});
	pi.on("provider_stream_event", (event) => {
		const { created, ...data } = event.data as Record<string, unknown>;
		pi.appendEntry("stream", { data, created: typeof created, provider: event.provider, api: event.api, model: event.model });
	});
}
