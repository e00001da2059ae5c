// A tool_call gate: every bash command needs the user's confirmation, asked through the
// extension UI (in RPC mode, an extension_ui_request the client answers).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("tool_call", async (event, ctx) => {
		if (event.toolName !== "bash") return undefined;
		const confirmed = await ctx.ui.confirm("Run bash?", String(event.input.command));
		return confirmed ? undefined : { block: true, reason: "Blocked by the user" };
	});
}
