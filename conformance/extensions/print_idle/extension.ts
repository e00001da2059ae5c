// Print mode with a command that sends a user message while idle (`-p "/ask say hello"`): Pi
// runs the message's input handlers within the command (its `input` entry is written), then
// print mode's end disposes the session before the message's run starts: no before_agent_start,
// no request, no session file.
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
