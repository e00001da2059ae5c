// A tool that asks through the extension UI before it acts: a notice (fire and forget), a
// confirmation and, when confirmed, an input; it answers with what it was told.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "deploy",
		label: "Deploy",
		description: "Deploys after asking.",
		parameters: Type.Object({ target: Type.String() }),
		async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
			ctx.ui.notify(`deploying to ${params.target}`, "info");
			ctx.ui.setStatus("deploy", "asking");
			const confirmed = await ctx.ui.confirm("Deploy?", `Deploy to ${params.target}?`);
			const tag = confirmed ? await ctx.ui.input("Tag", "v1") : undefined;
			return {
				content: [{ type: "text", text: `hasUI=${ctx.hasUI} confirmed=${confirmed} tag=${tag}` }],
				details: {},
			};
		},
	});
}
