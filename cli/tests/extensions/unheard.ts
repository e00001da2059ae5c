// Handlers for events the harness runs (`turn_end`, `agent_end`) and for one it does not yet
// (`provider_stream_event`): the run goes on, and the latter is said, not skipped silently.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("turn_end", () => {});
	pi.on("agent_end", () => {});
	pi.on("provider_stream_event", () => {});
}
