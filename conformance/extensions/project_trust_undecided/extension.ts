import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

// Leaves the decision to the next handler, twice: its own second handler, then the next extension's.
export default function (pi: ExtensionAPI) {
	pi.on("project_trust", async () => {
		console.error("first handler: undecided");
		return { trusted: "undecided" };
	});
	pi.on("project_trust", async () => {
		console.error("second handler: undecided");
		return { trusted: "undecided", remember: true };
	});
}
