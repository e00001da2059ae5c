// tool_prepare_arguments: what a shim sees as `this` (pi-agent-core calls it on the tool the
// agent holds, Pi's wrapper of the definition: its own fields, not the definition's others),
// and a shim that changes the model's arguments in place and then throws (the call's error
// is the thrown message; Pi's call keeps the change, so the later requests send it, those of
// the next prompt included, as they send a change in place the shim returned).
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const seen: unknown[] = [];
	pi.registerTool({
		name: "greet",
		label: "Greet",
		description: "Greets someone by name.",
		promptSnippet: "Greet someone",
		custom: "the definition's own field",
		parameters: Type.Object({ name: Type.String({ description: "Who to greet" }) }),
		prepareArguments(this: any, args: any) {
			seen.push({
				keys: Object.keys(this ?? {}).sort(),
				name: this?.name,
				snippet: this?.promptSnippet ?? null,
				custom: this?.custom ?? null,
				execute: typeof this?.execute,
				prepare: typeof this?.prepareArguments,
			});
			if (args && typeof args === "object" && args.mode === "edit-then-throw") {
				args.name = "edited";
				delete args.mode;
				throw new Error("edited in place, then threw");
			}
			if (args && typeof args === "object" && "who" in args) {
				args.name = String(args.who);
				delete args.who;
			}
			return args;
		},
		async execute(_id, params) {
			return { content: [{ type: "text", text: `Hello, ${params.name}! ${JSON.stringify(seen)}` }], details: {} };
		},
	} as any);
}
