// A tool that runs until its call is aborted, then answers with what its signal said.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "wait",
		label: "Wait",
		description: "Waits until it is stopped.",
		parameters: Type.Object({}),
		async execute(_toolCallId, _params, signal, onUpdate) {
			onUpdate?.({ content: [{ type: "text", text: "waiting" }], details: {} });
			await new Promise((resolve) => signal?.addEventListener("abort", resolve, { once: true }));
			throw new Error(`stopped: aborted=${signal?.aborted}`);
		},
	});
}
