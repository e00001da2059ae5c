// A command compacts with callbacks (Pi's `ctx.compact({ onComplete, onError })`): a compaction
// that cannot run calls `onError` with its error, one that ends calls `onComplete` with its
// result, and what they do (`pi.appendEntry`, `pi.sendMessage`) happens after `compaction_end`.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("squash", {
		description: "Compacts the session and says how it went",
		handler: async (args, ctx) => {
			ctx.compact({
				customInstructions: args || undefined,
				onComplete: (result) => {
					pi.sendMessage({
						customType: "compacted",
						content: `Compacted ${result.tokensBefore} tokens: ${result.summary}`,
						display: true,
						details: { firstKept: typeof result.firstKeptEntryId, after: result.estimatedTokensAfter > 0 },
					});
				},
				onError: (error) => {
					pi.appendEntry("compact_failed", { message: error.message, isError: error instanceof Error });
				},
			});
		},
	});
}
