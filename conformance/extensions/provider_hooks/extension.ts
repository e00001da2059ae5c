// Watches and changes what goes to the provider: the request body gains a field (chained over
// two handlers, the second seeing the first's), the headers gain one, and the response's status
// and the stream's finishing chunk are written as entries.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("before_provider_request", (event) => {
		const payload = event.payload as Record<string, unknown>;
		return { ...payload, metadata: { tag: "first" } };
	});
	pi.on("before_provider_request", (event) => {
		const payload = event.payload as Record<string, unknown>;
		const seen = payload.metadata as { tag: string };
		pi.appendEntry("payload", { model: payload.model, seen: seen.tag });
		return { ...payload, metadata: { tag: `${seen.tag}+second` } };
	});
	pi.on("before_provider_headers", (event) => {
		pi.appendEntry("headers", { names: Object.keys(event.headers).sort() });
		event.headers["x-api-key"] = "gateway-key";
	});
	pi.on("after_provider_response", (event) => {
		pi.appendEntry("response", { status: event.status, json: event.headers["content-type"] });
	});
	pi.on("provider_stream_event", (event) => {
		const data = event.data as { choices?: { finish_reason?: string }[] };
		const finish = data.choices?.[0]?.finish_reason;
		if (finish) pi.appendEntry("finish", { finish, provider: event.provider, api: event.api, model: event.model });
	});
}
