// Replaces messages as they end (an answer's secret redacted, a tool result's text
// upper-cased), and writes what each `turn_end` and `agent_end` then sees: Pi replaces the
// messages in place, so both see the replacements.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const texts = (message: { content: unknown }) =>
	Array.isArray(message.content) ? message.content.filter((b) => b.type === "text").map((b) => b.text) : [];

export default function (pi: ExtensionAPI) {
	pi.on("message_end", async (event) => {
		const message = event.message;
		if (message.role === "assistant") {
			return {
				message: {
					...message,
					content: message.content.map((block) =>
						block.type === "text" ? { ...block, text: block.text.replaceAll("hunter2", "[redacted]") } : block,
					),
				},
			};
		}
		if (message.role === "toolResult") {
			return {
				message: {
					...message,
					content: message.content.map((block) => (block.type === "text" ? { ...block, text: block.text.toUpperCase() } : block)),
				},
			};
		}
	});
	pi.on("turn_end", async (event) => {
		pi.appendEntry("turn_end", { message: texts(event.message), toolResults: event.toolResults.map(texts) });
	});
	pi.on("agent_end", async (event) => {
		pi.appendEntry("agent_end", { messages: event.messages.map(texts) });
	});
}
