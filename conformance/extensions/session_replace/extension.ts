// Hears the session replacements of RPC mode: `session_before_switch` cancels the first
// `new_session` and lets the next one through, `session_before_fork` lets `fork` and `clone`
// through; each handler writes an entry into the session it was told in and says what it heard
// through the UI, so the session files and stdout show the order, the reasons, which sessions
// were named and that the extension was loaded again for each new session (its factory ran
// again: a count kept on globalThis, and the events its own closure heard start over).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const seen = globalThis as { switchAsked?: number; loads?: number };
	seen.loads = (seen.loads ?? 0) + 1;
	const loads = seen.loads;
	let heardHere = 0;
	const heard = (what: string, data: Record<string, unknown>, ctx: { ui: { notify(m: string, l: string): void } }) => {
		heardHere += 1;
		pi.appendEntry(what, { ...data, loads, heardHere });
		ctx.ui.notify(`${what} ${JSON.stringify(data)} loads=${loads} heardHere=${heardHere}`, "info");
	};
	pi.on("session_start", async (event, ctx) => {
		heard("start", { reason: event.reason, previous: typeof event.previousSessionFile, same: event.previousSessionFile === ctx.sessionManager.getSessionFile() }, ctx);
	});
	pi.on("session_before_switch", async (event, ctx) => {
		seen.switchAsked = (seen.switchAsked ?? 0) + 1;
		const cancel = event.reason === "new" && seen.switchAsked === 1;
		heard("before_switch", { reason: event.reason, target: typeof event.targetSessionFile, cancel }, ctx);
		return cancel ? { cancel: true } : undefined;
	});
	pi.on("session_before_fork", async (event, ctx) => {
		const entry = ctx.sessionManager.getEntry(event.entryId);
		heard("before_fork", { position: event.position, entryType: entry?.type, keys: Object.keys(event).sort() }, ctx);
	});
	pi.on("session_shutdown", async (event, ctx) => {
		heard("shutdown", { reason: event.reason, target: typeof event.targetSessionFile, same: event.targetSessionFile === ctx.sessionManager.getSessionFile() }, ctx);
	});
}
