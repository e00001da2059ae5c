// A reload that changes what the extension registers (`/reload-it`: `ctx.reload()`): the
// factory counts its loads on `globalThis` (module state of its own starts over at a reload),
// and its first load registers a tool, a command and a `turn_end` handler that its second load
// does not; the second registers another tool (with a prompt snippet and guidelines), another
// command and handlers of `session_start` and `tool_result` the first did not have. After the
// reload the next request declares the second load's tool only, the model calls it, the new
// `tool_result` handler sees its result, and the commands listed are the second load's.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "@sinclair/typebox";

const kept = globalThis as { registrationLoads?: number };

export default function (pi: ExtensionAPI) {
	kept.registrationLoads = (kept.registrationLoads ?? 0) + 1;
	const load = kept.registrationLoads;
	if (load === 1) {
		pi.registerTool({
			name: "first_probe",
			label: "First probe",
			description: "Registered by the first load only",
			promptSnippet: "Probe the first load",
			parameters: Type.Object({}),
			async execute() {
				return { content: [{ type: "text", text: "first" }], details: {} };
			},
		});
		pi.registerCommand("first-only", {
			description: "Only the first load has it",
			handler: async (_args, ctx) => {
				ctx.ui.notify("first-only ran", "info");
			},
		});
		pi.on("turn_end", async () => {
			pi.appendEntry("first-turn-end", { load });
		});
	} else {
		pi.registerTool({
			name: "second_probe",
			label: "Second probe",
			description: "Registered by the second load only",
			promptSnippet: "Probe the second load",
			promptGuidelines: ["Call second_probe when asked to probe."],
			parameters: Type.Object({ what: Type.String() }),
			async execute(_id, params) {
				return { content: [{ type: "text", text: `second load probed ${params.what}` }], details: { load } };
			},
		});
		pi.registerCommand("second-only", {
			description: "Only the second load has it",
			handler: async (_args, ctx) => {
				ctx.ui.notify(`second-only ran (load ${load})`, "info");
				pi.appendEntry("second-only", { load });
			},
		});
		pi.on("session_start", async (event) => {
			pi.appendEntry("second-start", { reason: event.reason, load });
		});
		pi.on("tool_result", async (event) => {
			if (event.toolName !== "second_probe") return undefined;
			return { content: [...event.content, { type: "text", text: ` (seen by load ${load})` }] };
		});
	}
	pi.registerCommand("reload-it", {
		description: "Reload the extensions",
		handler: async (_args, ctx) => {
			await ctx.reload();
		},
	});
}
