// Registers a provider from a handler, once the extensions have loaded (Pi 1.5.2 applies it
// at once; this harness says it cannot yet).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("turn_end", async () => {
		pi.registerProvider("late", { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "k" });
	});
}
