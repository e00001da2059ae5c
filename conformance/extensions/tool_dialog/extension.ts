// A registered tool whose `execute` asks the user to confirm through its context's UI: the
// dialog tells every extension (`ui_prompt_start`/`ui_prompt_end`), as a hook's dialog does.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "@sinclair/typebox";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "deploy",
		label: "Deploy",
		description: "Deploys after asking",
		parameters: Type.Object({ target: Type.String() }),
		async execute(_id, params, _signal, _onUpdate, ctx) {
			const confirmed = await ctx.ui.confirm("Deploy?", params.target);
			return { content: [{ type: "text", text: confirmed ? `deployed ${params.target}` : "not deployed" }], details: {} };
		},
	});
}
