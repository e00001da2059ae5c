// Reports, before the run starts, what the tool getters say of Pi's built-in codemode tool: the
// registered tools' names in registry order (`powershell`, registered on every platform, among
// them), codemode's own entry whole, and the active tools; and what
// pi.getSettings() holds for codemode. An extension tool registered beside it shows where the
// built-in extension's tool falls in the registry, and its source.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "mine",
		label: "Mine",
		description: "An extension's tool.",
		parameters: Type.Object({}),
		async execute() {
			return { content: [{ type: "text", text: "mine" }], details: {} };
		},
	});
	pi.on("before_agent_start", async (_event, ctx) => {
		const all = pi.getAllTools();
		const codemode = all.find((tool) => tool.name === "codemode");
		ctx.ui.notify(
			JSON.stringify({
				all: all.map((tool) => tool.name),
				codemode: codemode ? { ...codemode, reachesTools: typeof codemode.reachesTools } : null,
				mine: all.find((tool) => tool.name === "mine")?.sourceInfo ?? null,
				active: pi.getActiveTools(),
				settings: pi.getSettings().codemode ?? null,
			}),
			"info",
		);
	});
}
