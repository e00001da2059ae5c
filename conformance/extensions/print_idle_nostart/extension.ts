// print_idle_then without a `before_agent_start` handler: the command's run starts at once
// when the message's `input` handlers are done, and nothing of it is printed.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("ask", {
		description: "Asks the model",
		handler: async (args) => {
			pi.appendEntry("asked", { args });
			pi.sendUserMessage(`Please ${args}.`);
		},
	});
	pi.on("input", async (event) => {
		pi.appendEntry("input", { text: event.text, source: event.source });
		return { action: "continue" };
	});
}
