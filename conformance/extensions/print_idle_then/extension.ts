// Print mode's next message after a command that sent a user message while idle
// (`-p "/ask say hello" "then what?"`): Pi starts the command's run during the message's
// `input` handlers, so the message finds the agent busy and fails (exit 1); disposing the
// session aborts the run before its request.
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
	pi.on("before_agent_start", async (event) => {
		pi.appendEntry("start", { messageType: event.messageType, prompt: event.prompt });
	});
}
