// A session a command replaces after a reload starts with the new load's registrations: the
// factory counts its loads on `globalThis`; the first load registers `first_probe`, the later
// ones `second_probe`. `/reload-it` reloads, `/new-it` (a later load's command) starts a new
// session, whose request declares the later load's tool; each load's `session_start` says
// which load heard it and why.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const kept = globalThis as { newSessionLoads?: number };

export default function (pi: ExtensionAPI) {
	kept.newSessionLoads = (kept.newSessionLoads ?? 0) + 1;
	const load = kept.newSessionLoads;
	const name = load === 1 ? "first_probe" : "second_probe";
	pi.registerTool({
		name,
		label: name,
		description: `Probe (load ${load})`,
		parameters: Type.Object({}),
		async execute() {
			return { content: [{ type: "text", text: `${name} probed` }], details: {} };
		},
	});
	pi.on("session_start", async (event) => {
		pi.appendEntry("started", { load, reason: event.reason });
	});
	pi.registerCommand("reload-it", {
		description: "Reload the extensions",
		handler: async (_args, ctx) => {
			await ctx.reload();
		},
	});
	pi.registerCommand("new-it", {
		description: "Start a new session",
		handler: async (_args, ctx) => {
			await ctx.newSession();
		},
	});
}
