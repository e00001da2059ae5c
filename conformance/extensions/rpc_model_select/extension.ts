// Hears the model changes an RPC client asks for (`set_model`, `cycle_model`), taking a moment
// before writing an entry for each: Pi answers those commands once the `model_select` handlers
// are done, so each entry comes before its command's response. A thinking level set over RPC
// is told too (`thinking_level_select`), without the response waiting for it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("model_select", async (event) => {
		await new Promise((resolve) => setTimeout(resolve, 50));
		pi.appendEntry("model", { model: event.model.id, previous: event.previousModel?.id, source: event.source });
	});
	pi.on("thinking_level_select", async (event) => {
		pi.appendEntry("thinking", { level: event.level, previous: event.previousLevel });
	});
}
