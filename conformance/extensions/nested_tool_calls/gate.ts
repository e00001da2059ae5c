// Another extension, which sees the nested calls as the session runs them: its `tool_call`
// gate blocks a bash another tool asked for, its `tool_result` transform marks what `shout`
// answered a tool, and it writes an entry at each nested call's start.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("tool_call", (event) => {
		if (event.toolName === "bash" && event.parentToolCallId) {
			return { block: true, reason: `no bash from ${event.parentToolCallId}` };
		}
	});
	pi.on("tool_result", (event) => {
		if (event.toolName === "shout" && event.parentToolCallId) {
			return { details: { ...(event.details as object), parent: event.parentToolCallId } };
		}
	});
	pi.on("tool_execution_start", (event) => {
		if (event.parentToolCallId) pi.appendEntry("nested-start", { id: event.toolCallId, parent: event.parentToolCallId });
	});
}
