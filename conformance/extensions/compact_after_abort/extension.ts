// `ctx.compact()` from an extension listening to a run the client aborted: the model's tool
// call waits until the run is aborted; the `agent_end` handler of that run asks a compaction
// (with its callbacks), which Pi starts once the session is idle: after `agent_settled` (its
// handlers and the event). The entries say what the hooks and the callback heard, and when.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "wait_abort",
		label: "wait_abort",
		description: "Waits until the run is aborted.",
		parameters: Type.Object({}),
		execute: async (_id, _params, signal) => {
			await new Promise<void>((resolve) => {
				if (signal?.aborted) resolve();
				signal?.addEventListener("abort", () => resolve(), { once: true });
			});
			return { content: [{ type: "text", text: "stopped" }], details: {} };
		},
	});
	const ask = (from: string, ctx: any) => {
		ctx.compact({
			customInstructions: `asked from ${from}`,
			onComplete: (result: any) => pi.appendEntry("on_complete", { from, summary: result.summary }),
			onError: (error: Error) => pi.appendEntry("on_error", { from, message: error.message }),
		});
		pi.appendEntry("asked", { from, idle: ctx.isIdle() });
	};
	pi.on("agent_end", async (event, ctx) => {
		const last = event.messages[event.messages.length - 1] as any;
		pi.appendEntry("agent_end", { stopReason: last?.stopReason ?? null, role: last?.role ?? null });
		if (last?.stopReason === "aborted" || last?.role === "toolResult") ask("agent_end", ctx);
	});
	pi.on("agent_settled", async (event, ctx) => {
		pi.appendEntry("settled", { aborted: event.aborted });
	});
	pi.on("session_before_compact", async (event) => {
		pi.appendEntry("before_compact", { reason: event.reason, customInstructions: event.customInstructions ?? null, aborted: event.signal.aborted });
	});
	pi.on("session_compact", async (event) => {
		pi.appendEntry("compacted", { reason: event.reason });
	});
	pi.on("session_compact_failed", async (event) => {
		pi.appendEntry("compact_failed", { reason: event.reason, aborted: event.aborted, errorMessage: event.errorMessage ?? null });
	});
}
