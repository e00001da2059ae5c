import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

// A handler that throws, one that answers nothing, then one that trusts.
export default function (pi: ExtensionAPI) {
	pi.on("project_trust", async () => {
		throw new Error("cannot decide");
	});
	pi.on("project_trust", async () => undefined as never);
	pi.on("project_trust", async () => ({ trusted: "yes" }));
	pi.on("session_start", async (_event, ctx) => {
		pi.appendEntry("trusted", { trusted: ctx.isProjectTrusted() });
	});
}
