// Listens to the provider's answer: the response's status and content type, and the stream's
// finishing chunk, each written as an entry.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("after_provider_response", (event) => {
		pi.appendEntry("response", { status: event.status, json: event.headers["content-type"] });
	});
	pi.on("provider_stream_event", (event) => {
		const data = event.data as { choices?: { finish_reason?: string }[] };
		const finish = data.choices?.[0]?.finish_reason;
		if (finish) pi.appendEntry("finish", { finish, provider: event.provider, api: event.api, model: event.model });
	});
}
