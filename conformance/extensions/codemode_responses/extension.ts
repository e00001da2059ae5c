// A tool with an output schema, so a codemode script gets its structured content, beside the
// built-ins a script calls by text. The run activates Pi's built-in `codemode` tool with
// `--tools +codemode`; the model's script calls `read`, `shout` and `bash`, stores a value,
// logs, and returns.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "shout",
		label: "Shout",
		description: "Upper-cases a text.",
		parameters: Type.Object({ text: Type.String() }),
		outputSchema: Type.Object({ loud: Type.String(), length: Type.Number() }),
		async execute(_id, params) {
			const loud = params.text.toUpperCase();
			return {
				content: [{ type: "text", text: loud }],
				structuredContent: { loud, length: params.text.length },
				details: {},
			};
		},
	});
}
