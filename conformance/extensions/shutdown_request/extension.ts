// `ctx.shutdown()`: in RPC mode the process ends once nothing needs it (no command being
// handled, the session idle), the extensions hearing `session_shutdown` (reason `quit`) first;
// in print mode nothing listens (Pi binds no handler there). `/bye` asks from a command; a
// prompt naming "stop" asks from its first `turn_end`, and the run still settles first.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let stopAsked = false;
	pi.on("input", async (event) => {
		stopAsked = event.text.includes("stop");
	});
	pi.on("turn_end", async (_event, ctx) => {
		if (!stopAsked) return;
		stopAsked = false;
		ctx.shutdown();
		ctx.ui.notify("shutdown asked at turn_end", "info");
	});
	pi.on("session_shutdown", async (event, ctx) => {
		pi.appendEntry("shutdown", { reason: event.reason });
		ctx.ui.notify(`bye ${event.reason}`, "info");
	});
	pi.registerCommand("bye", {
		description: "End the session",
		handler: async (_args, ctx) => {
			ctx.shutdown();
			ctx.ui.notify("shutdown asked", "info");
		},
	});
}
