// A command that writes an entry, then throws: Pi reports the error (`command:boom`, at the
// `command` event) and the prompt is handled all the same, with no model call.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("boom", {
		description: "Fails after writing an entry",
		handler: async (args) => {
			pi.appendEntry("before", { args });
			throw new Error(`boom ${args}`);
		},
	});
}
