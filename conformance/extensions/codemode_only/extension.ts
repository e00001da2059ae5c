// A tool of the extension's beside the built-ins, for codemode's `only` mode (the settings'
// `codemode.mode`): every tool a script can call is listed in codemode's description and none
// of them is declared to the model, whose requests declare codemode alone.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "shout",
		label: "Shout",
		description: "Upper-cases a text.",
		promptSnippet: "Upper-case a text",
		promptGuidelines: ["Use shout for emphasis."],
		parameters: Type.Object({ text: Type.String() }),
		async execute(_id, params) {
			return { content: [{ type: "text", text: params.text.toUpperCase() }], details: {} };
		},
	});
}
