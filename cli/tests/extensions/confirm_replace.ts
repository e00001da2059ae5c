// Asks the user before the session is left: `session_before_switch` waits for a confirmation
// through the UI and cancels when it is refused.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_switch", async (event, ctx) => {
		const ok = await ctx.ui.confirm("Leave the session?", `reason: ${event.reason}`);
		pi.appendEntry("asked", { ok });
		return { cancel: !ok };
	});
}
