// Handles none of the session's start events: after RPC `new_session`, Pi has loaded the
// extension again for the new session (its factory ran again: a count kept on globalThis), so
// the new session has the new load's tool and command (named by the count) and not the first
// load's, though no handler hears the replacement.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const seen = globalThis as { loads?: number };
	seen.loads = (seen.loads ?? 0) + 1;
	const loads = seen.loads;
	pi.registerTool({
		name: `probe_${loads}`,
		label: `Probe ${loads}`,
		description: `The probe of load ${loads}.`,
		parameters: Type.Object({}),
		async execute() {
			return { content: [{ type: "text", text: `load ${loads}` }], details: {} };
		},
	});
	pi.registerCommand(`which_${loads}`, {
		description: `Says load ${loads}.`,
		handler: async (_args, ctx) => {
			ctx.ui.notify(`load ${loads}`, "info");
		},
	});
}
