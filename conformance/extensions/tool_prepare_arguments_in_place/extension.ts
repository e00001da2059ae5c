// tool_prepare_arguments with a shim that renames the legacy field in the object it is given
// and returns that object: Pi's call holds it, so the later requests send the changed
// arguments and `ctx.executeTool`'s outcome reports them, while `tool_execution_start` and the
// session's assistant message, written before, keep the model's.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "greet",
		label: "Greet",
		description: "Greets someone by name.",
		parameters: Type.Object({ name: Type.String({ description: "Who to greet" }) }),
		prepareArguments(args: any) {
			if (args && typeof args === "object" && args.name === "BOOM") throw new Error("cannot prepare BOOM");
			if (args && typeof args === "object" && args.name === "NONE") return undefined;
			if (args && typeof args === "object" && "who" in args) {
				args.name = String(args.who);
				delete args.who;
				return args;
			}
			return args;
		},
		async execute(_id, params) {
			return { content: [{ type: "text", text: `Hello, ${params.name}!` }], details: { params } };
		},
	});
	pi.registerTool({
		name: "relay",
		label: "Relay",
		description: "Greets through another tool.",
		parameters: Type.Object({}),
		async execute(_id, _params, _signal, _onUpdate, ctx) {
			const seen = [];
			for (const args of [{ who: "nested" }, { name: "BOOM" }]) {
				const outcome = await ctx.executeTool("greet", args);
				seen.push({
					isError: outcome.isError,
					text: outcome.result.content.map((block) => (block.type === "text" ? block.text : block.type)).join(""),
					arguments: outcome.toolCall.arguments,
				});
			}
			return { content: [{ type: "text", text: JSON.stringify(seen) }], details: {} };
		},
	});
	pi.on("tool_call", async (event) => {
		pi.appendEntry("tool-call-seen", { tool: event.toolName, input: event.input });
		return undefined;
	});
	pi.on("tool_result", async (event) => {
		pi.appendEntry("tool-result-seen", { tool: event.toolName, input: event.input, isError: event.isError });
		return undefined;
	});
}
