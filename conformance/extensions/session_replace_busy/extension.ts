// Hears a `new_session` read while a run streams: `session_before_switch` is asked as the run
// goes on, then the run is aborted before the old session hears `session_shutdown` (its
// entry after the aborted answer), and the new session hears `session_start`.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_switch", async (event, ctx) => {
		pi.appendEntry("before_switch", { reason: event.reason, idle: ctx.isIdle() });
	});
	pi.on("session_shutdown", async (event, ctx) => {
		pi.appendEntry("shutdown", { reason: event.reason, idle: ctx.isIdle() });
		ctx.ui.notify(`shutdown ${event.reason}`, "info");
	});
	pi.on("session_start", async (event, ctx) => {
		ctx.ui.notify(`start ${event.reason}`, "info");
	});
}
