// Not loaded at the start: the run starts with no extension at all. The RPC client's `bash`
// names this file in the agent directory's settings' `extensions`, then asks `new_session`:
// Pi builds the new session's runtime afresh, its resource loader reads the settings again and
// loads this extension, which hears the new session's start, registers its tool (declared in
// the next request) and its command (listed, and run).
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "added_probe",
		label: "Added probe",
		description: "The probe of the extension the settings named since.",
		parameters: Type.Object({}),
		async execute() {
			return { content: [{ type: "text", text: "added" }], details: {} };
		},
	});
	pi.registerCommand("added-cmd", {
		description: "Says it was loaded.",
		handler: async (_args, ctx) => {
			ctx.ui.notify("added-cmd ran", "info");
			pi.appendEntry("added-ran", { cwd: typeof ctx.cwd });
		},
	});
	pi.on("session_start", async (event, ctx) => {
		pi.appendEntry("added-started", { reason: event.reason, previous: typeof event.previousSessionFile });
		ctx.ui.notify(`started ${event.reason}`, "info");
	});
}
