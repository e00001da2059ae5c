import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

// Trusts the project and asks Pi to remember it; says what its context is on stderr.
export default function (pi: ExtensionAPI) {
	pi.on("project_trust", async (event, ctx) => {
		const picked = await ctx.ui.select("Trust?", ["yes", "no"]);
		const confirmed = await ctx.ui.confirm("Trust", "really?");
		ctx.ui.notify(
			`project_trust ${event.type} cwd=${event.cwd} same=${event.cwd === ctx.cwd} mode=${ctx.mode} hasUI=${ctx.hasUI} select=${picked} confirm=${confirmed}`,
			"info",
		);
		return { trusted: "yes", remember: true };
	});
	pi.on("session_start", async (_event, ctx) => {
		pi.appendEntry("trusted", { trusted: ctx.isProjectTrusted() });
	});
}
