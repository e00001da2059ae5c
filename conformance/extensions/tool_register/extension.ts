// Registers a tool with a prompt snippet and guidelines, which streams one update and answers
// with the sum of its arguments.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "add",
		label: "Add",
		description: "Adds two numbers.",
		promptSnippet: "Add two numbers",
		promptGuidelines: ["Use add for arithmetic instead of computing in your head."],
		parameters: Type.Object({
			a: Type.Number({ description: "The first number" }),
			b: Type.Number({ description: "The second number" }),
		}),
		async execute(_toolCallId, params, _signal, onUpdate) {
			onUpdate?.({ content: [{ type: "text", text: "adding" }], details: { step: 1 } });
			return { content: [{ type: "text", text: String(params.a + params.b) }], details: { sum: params.a + params.b } };
		},
	});
}
