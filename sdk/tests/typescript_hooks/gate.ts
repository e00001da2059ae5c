// A gate and a prompt addition: `bash` is refused, and every run's system prompt gains a line;
// the session file the handler reads is written down in an entry.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("tool_call", (event) => {
		if (event.toolName === "bash") return { block: true, reason: "no shell here" };
	});
	pi.on("before_agent_start", (event, ctx) => {
		pi.appendEntry("session-file", { file: ctx.sessionManager.getSessionFile() ?? null });
		return { systemPrompt: `${event.systemPrompt}\nGATED` };
	});
}
