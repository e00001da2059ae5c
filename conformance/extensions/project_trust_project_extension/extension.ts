import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

// Trusts the project (without remembering); its session_start handler runs before the project extension's.
export default function (pi: ExtensionAPI) {
	console.error("cli extension loaded");
	pi.on("project_trust", async () => ({ trusted: "yes" }));
	pi.on("session_start", async () => {
		pi.appendEntry("order", { who: "cli" });
	});
}
