// Changes the active tools from its handlers and reports what the tool getters answer as a
// notify (in RPC mode, an extension_ui_request line): before the run starts it asks for a
// registered inactive tool, an active one and an unknown name (ignored), so the first request
// declares them and the prompt lists them; at the first turn's end it asks for tools in another
// order (the active one asked for keeps its place), which the run's next request declares with a
// system message patching the prompt's tools. The registered tools are reported whole, the
// built-ins `powershell` (registered inactive on every platform) and `codemode` among them;
// `tool_search` (its built-in extension's, registered inactive) is reported whole.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	const report = (point: string, ctx: ExtensionContext) => {
		const all = pi.getAllTools();
		const grep = all.find((tool) => tool.name === "grep");
		const search = all.find((tool) => tool.name === "tool_search");
		ctx.ui.notify(
			JSON.stringify({
				point,
				active: pi.getActiveTools(),
				all: all.map((tool) => tool.name),
				grep: grep
					? {
							description: grep.description,
							parameters: grep.parameters,
							promptGuidelines: grep.promptGuidelines ?? null,
							exposure: grep.exposure ?? null,
							sourceInfo: grep.sourceInfo,
						}
					: null,
				toolSearch: search ?? null,
			}),
			"info",
		);
	};
	pi.on("before_agent_start", async (_event, ctx) => {
		report("before_agent_start", ctx);
		pi.setActiveTools(["grep", "read", "nope"]);
		report("after setActiveTools", ctx);
	});
	pi.on("turn_end", async (_event, ctx) => {
		turns += 1;
		if (turns !== 1) return;
		pi.setActiveTools(["ls", "grep", "bash"]);
		report("turn_end", ctx);
	});
}
