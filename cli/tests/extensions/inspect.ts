// A registered tool that reads the session through its context and acts while it runs: it
// reports a partial result, appends an entry, then says what it saw (the
// model, whether the session is idle, the branch with its own entry last).
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "inspect",
		label: "Inspect",
		description: "Says what it sees of the session.",
		parameters: Type.Object({}),
		async execute(_id, _params, _signal, onUpdate, ctx) {
			onUpdate?.({ content: [{ type: "text", text: "looking" }], details: {} });
			pi.appendEntry("inspected", { model: ctx.model?.id ?? null });
			const seen = {
				model: ctx.model?.id ?? null,
				idle: ctx.isIdle(),
				branch: ctx.sessionManager.getBranch().map((entry) => entry.type),
				leafIsMine: ctx.sessionManager.getLeafEntry()?.type === "custom",
			};
			return { content: [{ type: "text", text: JSON.stringify(seen) }], details: seen };
		},
	});
}
