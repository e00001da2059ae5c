// Hears `session_info_changed` (Pi tells it without waiting): from RPC `set_session_name` and
// from its own `pi.setSessionName` at the end of a run; each time it says the name it heard
// through the UI and writes it in an entry.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_info_changed", async (event, ctx) => {
		ctx.ui.notify(`named ${event.name}`, "info");
		pi.appendEntry("named", { name: event.name ?? null });
	});
	pi.on("agent_end", async () => {
		pi.setSessionName("after the run");
	});
}
