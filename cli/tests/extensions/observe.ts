// Hears the loop's events as Pi's session passes them: counts each response's updates and
// writes the count when the message ends, writes each tool's end, and queues one follow-up
// from the first run's `agent_end`, which continues the run.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let updates = 0;
	let ends = 0;
	pi.on("message_update", async (event) => {
		// Pi's provider event carries the message so far as its `partial`.
		if (event.assistantMessageEvent.partial?.role === "assistant") updates += 1;
	});
	pi.on("message_end", async (event) => {
		if (event.message.role !== "assistant") return;
		pi.appendEntry("updates", { updates });
		updates = 0;
	});
	pi.on("tool_execution_end", async (event) => pi.appendEntry("tool", { name: event.toolName, isError: event.isError }));
	pi.on("agent_end", async () => {
		ends += 1;
		if (ends === 1) pi.sendUserMessage("Once more.", { deliverAs: "followUp" });
	});
}
