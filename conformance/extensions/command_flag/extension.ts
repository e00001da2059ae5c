// A command and two flags: `/note <text>` writes a `note` entry and a displayed `note` message
// (the text never reaches the model as a prompt), worded with the `--greeting` flag's value and
// in capitals under `--loud`.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerFlag("greeting", { type: "string", default: "hello", description: "How a note starts" });
	pi.registerFlag("loud", { type: "boolean", default: false, description: "Notes in capitals" });
	pi.registerCommand("note", {
		description: "Keep a note in the session",
		handler: async (args, ctx) => {
			const text = `${pi.getFlag("greeting")} ${args}`;
			pi.appendEntry("note", { args, idle: ctx.isIdle() });
			pi.sendMessage({ customType: "note", content: pi.getFlag("loud") ? text.toUpperCase() : text, display: true });
		},
	});
}
