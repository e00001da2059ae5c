// A reload command (`/reload-it`): `ctx.reload()` tells this extension's session its shutdown
// (reason `reload`), loads the extensions again (a module-level counter starts over; one kept on
// `globalThis` goes on), and tells the new load its start (reason `reload`) and its resources'
// discovery. The command narrowed the active tools first: a reload keeps the active ones and
// activates the extension's tool again. The handler's ctx is stale after the reload.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "@sinclair/typebox";

let loads = 0;

export default function (pi: ExtensionAPI) {
	loads += 1;
	const kept = globalThis as { factories?: number };
	kept.factories = (kept.factories ?? 0) + 1;
	pi.registerTool({
		name: "probe",
		label: "Probe",
		description: "Says which load registered it",
		parameters: Type.Object({}),
		async execute() {
			return { content: [{ type: "text", text: `load ${loads}` }], details: {} };
		},
	});
	pi.on("session_start", async (event, ctx) => {
		pi.appendEntry("start", { reason: event.reason, loads, factories: kept.factories });
		ctx.ui.notify(`start ${event.reason} (module loads ${loads}, factories ${kept.factories})`, "info");
	});
	pi.on("session_shutdown", async (event) => {
		pi.appendEntry("shutdown", { reason: event.reason, target: event.targetSessionFile !== undefined });
	});
	pi.on("resources_discover", async (event, ctx) => {
		ctx.ui.notify(`discover ${event.reason}`, "info");
	});
	pi.registerCommand("narrow", {
		description: "Only read is active",
		handler: async () => {
			pi.setActiveTools(["read"]);
		},
	});
	pi.registerCommand("reload-it", {
		description: "Reload the extensions",
		handler: async (_args, ctx) => {
			ctx.ui.notify(`before reload: ${pi.getActiveTools().join(",")}`, "info");
			await ctx.reload();
			ctx.ui.notify("the old ctx after the reload", "info");
		},
	});
}
