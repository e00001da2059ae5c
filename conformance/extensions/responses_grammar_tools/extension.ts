// Extension tools asking for grammar constrained sampling over OpenAI Responses: `pick` with a
// regex variant over its one required string property (an optional one beside it), sent as a
// custom tool; `bad` with a Lark variant over two required properties, which Pi refuses before
// the request is sent.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "pick",
		label: "Pick",
		description: "Picks yes or no.",
		parameters: Type.Object({ choice: Type.String(), note: Type.Optional(Type.String()) }),
		constrainedSampling: { type: "grammar", variants: { openai_regex: "^(yes|no)$" } },
		async execute(_id, params) {
			return { content: [{ type: "text", text: `picked ${params.choice}` }], details: {} };
		},
	});
	pi.registerTool({
		name: "bad",
		label: "Bad",
		description: "Cannot take a grammar.",
		parameters: Type.Object({ a: Type.String(), b: Type.String() }),
		constrainedSampling: { type: "grammar", variants: { openai_lark: "start: \"x\"" } },
		async execute() {
			return { content: [{ type: "text", text: "unreached" }], details: {} };
		},
	});
}
