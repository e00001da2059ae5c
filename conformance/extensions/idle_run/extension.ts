// Commands that start a run while the agent is idle: `/ask` writes an entry and sends a user
// message (Pi's `sendUserMessage`, which prompts as typed by an extension); `/note`
// sends a custom message with `triggerTurn: true` (Pi's `_startRun` with the message as its
// prompt). The command is handled first; the run its message starts comes after, and
// `before_agent_start` tells which message started it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("ask", {
		description: "Asks the model",
		handler: async (args) => {
			pi.appendEntry("asked", { args });
			pi.sendUserMessage(`Please ${args}.`);
		},
	});
	pi.registerCommand("note", {
		description: "Notes something and lets the model answer",
		handler: async (args) => {
			pi.sendMessage({ customType: "note", content: `Note: ${args}`, display: true }, { triggerTurn: true });
			pi.appendEntry("noted", { args });
		},
	});
	pi.on("before_agent_start", async (event) => {
		const message = event.messageType === "custom" ? (event as { message?: { customType?: string } }).message : undefined;
		pi.appendEntry("start", { messageType: event.messageType, prompt: event.prompt, customType: message?.customType });
	});
	pi.on("input", async (event) => {
		pi.appendEntry("input", { text: event.text, source: event.source });
		return { action: "continue" };
	});
}
