// A command that asks the model: its user message starts a run once the command is answered.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("ask", {
		description: "Asks the model",
		handler: async (args) => {
			pi.sendUserMessage(`Please ${args}.`);
		},
	});
}
