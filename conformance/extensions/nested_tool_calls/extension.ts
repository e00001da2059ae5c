// A tool that calls other tools while it runs (Pi 1.5's `ctx.executeTool`): a built-in
// (`read`), a tool of this extension (`shout`, which streams an update), one another
// extension's `tool_call` gate blocks because a tool asked for it (`bash`, see gate.ts), and
// one that does not exist. It lists the tools it may call (`ctx.tools`) and says what each
// call answered.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "shout",
		label: "Shout",
		description: "Upper-cases a text.",
		parameters: Type.Object({ text: Type.String() }),
		async execute(_id, params, _signal, onUpdate) {
			onUpdate?.({ content: [{ type: "text", text: "shouting" }], details: {} });
			return { content: [{ type: "text", text: params.text.toUpperCase() }], details: { length: params.text.length } };
		},
	});
	pi.registerTool({
		name: "gather",
		label: "Gather",
		description: "Calls other tools and reports what they answered.",
		parameters: Type.Object({}),
		async execute(_id, _params, _signal, _onUpdate, ctx) {
			const tools = ctx.tools.map((tool) => tool.name);
			const seen = [];
			for (const [name, args] of [
				["read", { path: "a.txt" }],
				["shout", { text: "quiet" }],
				["bash", { command: "echo refused" }],
				["nope", {}],
			] as const) {
				const outcome = await ctx.executeTool(name, args);
				seen.push({
					id: outcome.toolCall.id,
					name: outcome.toolCall.name,
					isError: outcome.isError,
					text: outcome.result.content.map((block) => (block.type === "text" ? block.text : block.type)).join(""),
					details: outcome.result.details ?? null,
				});
			}
			return { content: [{ type: "text", text: JSON.stringify({ tools, seen }) }], details: { calls: seen.length } };
		},
	});
}
