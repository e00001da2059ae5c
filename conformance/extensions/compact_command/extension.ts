// A command that compacts the session while the agent is idle (Pi's `ctx.compact()` with custom
// instructions): the command is handled, then the compaction runs as a manual one, its summary
// request carrying the instructions.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("squash", {
		description: "Compacts the session",
		handler: async (args, ctx) => {
			pi.appendEntry("squash", { args });
			ctx.compact({ customInstructions: args });
		},
	});
}
