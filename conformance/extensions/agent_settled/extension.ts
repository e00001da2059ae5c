// Hears `agent_settled` (Pi awaits its handlers before the session's own `agent_settled`
// event goes out): says so through the UI (RPC mode prints it before the event), writes an
// entry with what it was told and whether the session was idle, and the first time asks for
// one more run with a user message, as an auto-continue extension does.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let settles = 0;
	pi.on("agent_settled", async (event, ctx) => {
		settles += 1;
		ctx.ui.notify(`settled ${settles} aborted=${event.aborted}`, "info");
		pi.appendEntry("settled", { aborted: event.aborted, idle: ctx.isIdle(), settles });
		if (settles === 1) pi.sendUserMessage("One more time.");
	});
}
