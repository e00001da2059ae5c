// Sees each request's whole context, system messages included (`context_with_system`, after
// the `context` handlers): adds a section to the leading system message on the first request
// (the request's system prompt carries it), notes the roles it saw, and on a prompt that says
// "drop" removes the leading system message, which Pi reports as the handler's error.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("context", async (event) => {
		// Keeps only the last user message and what follows it.
		const last = event.messages.map((m) => m.role).lastIndexOf("user");
		return { messages: event.messages.slice(last) };
	});
	pi.on("context_with_system", async (event, ctx) => {
		const roles = event.messages.map((m) => m.role).join(",");
		ctx.ui.notify(`with system: ${roles}`, "info");
		const last = event.messages[event.messages.length - 1];
		const text = typeof last.content === "string" ? last.content : last.content?.map((c) => c.text ?? "").join("");
		if (text?.includes("drop")) return { messages: event.messages.slice(1) };
		const [head, ...rest] = event.messages;
		return { messages: [{ ...head, sections: { ...head.sections, reminder: "Be brief." } }, ...rest] };
	});
}
