// Handles the loop's events (the notifications, each awaited before the event goes further) and
// writes what each showed as an entry, so the session file and the `entry_appended` events say
// which came, in which order, with what. The first run's `agent_end` queues a follow-up, which
// Pi's session runs as a continuation of that run.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let ends = 0;
	const seen = (data: Record<string, unknown>) => pi.appendEntry("seen", data);
	pi.on("agent_start", async () => seen({ type: "agent_start" }));
	pi.on("turn_start", async (event) =>
		seen({ type: "turn_start", turnIndex: event.turnIndex, stamped: typeof event.timestamp === "number" }),
	);
	pi.on("message_start", async (event) => seen({ type: "message_start", role: event.message.role }));
	pi.on("message_update", async (event) =>
		seen({
			type: "message_update",
			kind: event.assistantMessageEvent.type,
			partial: event.assistantMessageEvent.partial?.role ?? "none",
			blocks: event.message.content.length,
		}),
	);
	pi.on("message_end", async (event) => seen({ type: "message_end", role: event.message.role }));
	pi.on("tool_execution_start", async (event) =>
		seen({ type: "tool_execution_start", toolName: event.toolName, args: event.args }),
	);
	pi.on("tool_execution_end", async (event) =>
		seen({
			type: "tool_execution_end",
			toolName: event.toolName,
			isError: event.isError,
			text: event.result.content[0]?.text,
		}),
	);
	pi.on("agent_end", async (event) => {
		ends += 1;
		seen({ type: "agent_end", messages: event.messages.length, ends });
		if (ends === 1) pi.sendUserMessage("And b.txt?", { deliverAs: "followUp" });
	});
}
