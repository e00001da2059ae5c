// An extension compacts mid run (Pi's `ctx.compact()` from `turn_end`): the run is aborted and
// heard to its end (`agent_settled` aborted), then the compaction runs as a manual one with the
// custom instructions.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("turn_end", async (event, ctx) => {
		if (event.toolResults.length > 0) {
			ctx.compact({ customInstructions: "keep the file name" });
		}
	});
}
