// Reports what its getters read at `input` and `turn_end` as notices: the input's source, and
// whether the agent is idle, how many entries the session holds and what its leaf is.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const seen = (ctx: ExtensionContext) => {
		const leaf = ctx.sessionManager.getLeafEntry();
		const role = leaf?.type === "message" ? leaf.message.role : leaf?.type;
		return `idle=${ctx.isIdle()} entries=${ctx.sessionManager.getEntries().length} leaf=${role}`;
	};
	pi.on("input", (event, ctx) => {
		ctx.ui.notify(`input source=${event.source} ${seen(ctx)}`, "info");
		return { action: "continue" };
	});
	pi.on("turn_end", (_event, ctx) => ctx.ui.notify(`turn_end ${seen(ctx)}`, "info"));
}
