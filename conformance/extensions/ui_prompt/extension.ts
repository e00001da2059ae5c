// A tool_call gate that asks the user to confirm each bash command through the extension UI,
// and hears the dialogs' `ui_prompt_start`/`ui_prompt_end` too (Pi's runner tells every
// extension, the one that asked included).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("tool_call", async (event, ctx) => {
		if (event.toolName !== "bash") return undefined;
		const confirmed = await ctx.ui.confirm("Run bash?", String(event.input.command));
		return confirmed ? undefined : { block: true, reason: "Blocked by the user" };
	});
	pi.on("ui_prompt_end", async (event, ctx) => {
		ctx.ui.notify(`gate heard ${event.type} ${event.kind}`, "info");
	});
}
