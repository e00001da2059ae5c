// Listens to a response as it streams: each update the loop makes of it, and each event the
// provider sends. It does nothing with them; that something listens is what matters.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("message_update", async () => {});
	pi.on("provider_stream_event", async () => {});
}
