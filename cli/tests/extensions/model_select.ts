// Takes a moment over each model change before writing an entry that names it: an RPC client's
// `set_model` / `cycle_model` is answered only once it is done.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("model_select", async (event) => {
		await new Promise((resolve) => setTimeout(resolve, 200));
		pi.appendEntry("model", { model: event.model.id, source: event.source });
	});
}
