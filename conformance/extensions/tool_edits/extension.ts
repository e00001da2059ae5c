// What a tool's hooks may change, and two extensions' talk: a tool_call handler rewrites the
// arguments in place (Pi runs the tool with the changed input), a tool that throws fails its
// call with the error's text, a tool_result handler rewrites a failed result's text and flag,
// and the extensions' shared event bus carries a note from the tool to a listener, which the
// tool_result handler reports.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const notes: unknown[] = [];
	pi.events.on("note", (data) => notes.push(data));
	pi.registerTool({
		name: "shout",
		label: "Shout",
		description: "Shouts a word, and refuses some.",
		parameters: Type.Object({ word: Type.String({ description: "The word" }) }),
		async execute(_id, params) {
			pi.events.emit("note", { word: params.word });
			if (params.word === "NOPE") throw new Error(`cannot shout ${params.word}`);
			return { content: [{ type: "text", text: params.word.toUpperCase() + "!" }], details: { word: params.word } };
		},
	});
	pi.on("tool_call", async (event) => {
		if (event.toolName === "shout" && event.input.word === "quiet") event.input.word = "loud";
		if (event.toolName === "read") event.input.path = "b.txt";
		return undefined;
	});
	pi.on("tool_result", async (event) => {
		pi.appendEntry("result-seen", { tool: event.toolName, isError: event.isError, input: event.input, notes: notes.length });
		if (event.toolName === "shout" && event.isError) {
			return { content: [{ type: "text", text: "shouting failed politely" }], isError: false };
		}
		return undefined;
	});
}
