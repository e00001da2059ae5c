// After a first prompt's run, a command asks for three runs while idle: a note with
// `triggerTurn: true`, a user message and another note. Pi starts the first note's run at once,
// so the others find it running: the user message (its input handlers run first) is refused
// with Pi's error at `send_user_message`, the second note steers the run, which delivers it
// after the first in its first turn. (With no assistant message yet, Pi reaches the first run's
// before_agent_start before the user message's input handlers; ours asks them first.)
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("mixed", {
		description: "Sends a note, a user message and a note",
		handler: async () => {
			pi.sendMessage({ customType: "note", content: "Note one", display: true }, { triggerTurn: true });
			pi.sendUserMessage("After the note.");
			pi.sendMessage({ customType: "note", content: "Note two", display: true }, { triggerTurn: true });
		},
	});
	pi.on("input", async (event) => {
		pi.appendEntry("input", { text: event.text, source: event.source });
		return { action: "continue" };
	});
	pi.on("before_agent_start", async (event) => {
		const message = event.messageType === "custom" ? (event as { message?: { content?: unknown } }).message : undefined;
		pi.appendEntry("start", { messageType: event.messageType, prompt: event.prompt, content: message?.content });
	});
}
