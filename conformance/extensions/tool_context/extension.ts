// A registered tool that reads the session through its context and acts while it runs, as
// Pi's tools may: the model in use, whether the session is idle, the branch so far, and an
// entry appended from inside the tool, before its result.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "inspect",
		label: "Inspect",
		description: "Says what it sees of the session.",
		parameters: Type.Object({}),
		async execute(_id, _params, _signal, _onUpdate, ctx) {
			pi.appendEntry("inspected", { model: ctx.model?.id ?? null });
			const seen = {
				model: ctx.model?.id ?? null,
				idle: ctx.isIdle(),
				branch: ctx.sessionManager.getBranch().map((entry) => entry.type),
				cwdKnown: typeof ctx.cwd === "string",
			};
			return { content: [{ type: "text", text: JSON.stringify(seen) }], details: seen };
		},
	});
}
