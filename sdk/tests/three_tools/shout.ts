// A tool-registering extension for the recording of a run that uses three kinds of tool:
// `shout` answers with its word in capitals, reports progress once, and leaves a file in the
// session's directory so that a test can tell it ran.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "shout",
		label: "Shout",
		description: "Shouts a word.",
		promptSnippet: "Shout a word",
		parameters: Type.Object({ word: Type.String({ description: "What to shout" }) }),
		async execute(_toolCallId, params, _signal, onUpdate, ctx) {
			onUpdate?.({ content: [{ type: "text", text: "drawing breath" }], details: { step: 1 } });
			writeFileSync(join(ctx.cwd, "shouted.txt"), params.word);
			return { content: [{ type: "text", text: `${params.word.toUpperCase()}!` }], details: { shouted: params.word } };
		},
	});
}
