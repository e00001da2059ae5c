// Replaces messages as they end: an answer's secret redacted (what is printed, written and
// sent next has the redaction), a tool result's text upper-cased, and, from a second handler,
// a try at turning a user message into an assistant one (another role: Pi reports it and
// keeps the message).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

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
	pi.on("message_end", async (event) => {
		if (event.message.role === "user") return { message: { role: "assistant", content: [] } as never };
	});
}
