// Another extension, which asks nothing: it says each dialog it hears of as a notice (where it
// comes among the output), and once the dialog has ended writes both events down as an entry
// (what the session holds, and where).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let started: unknown;
	pi.on("ui_prompt_start", async (event, ctx) => {
		ctx.ui.notify(`heard ${event.type} ${event.kind} ${event.title ?? "(no title)"}`, "info");
		started = { ...event };
	});
	pi.on("ui_prompt_end", async (event, ctx) => {
		ctx.ui.notify(`heard ${event.type} ${event.kind} ${event.title ?? "(no title)"}`, "info");
		pi.appendEntry("heard", { started, ended: { ...event }, hasUI: ctx.hasUI });
	});
}
