// Hears of every dialog and throws at each: its errors are its own, at the dialog's events,
// and leave the dialog's handler and its answer alone.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("ui_prompt_start", async (event) => {
		throw new Error(`no ${event.kind} wanted`);
	});
	pi.on("ui_prompt_end", async () => {
		throw new Error("still none wanted");
	});
}
