import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

// Trusts the project (without remembering), so its .pi/SYSTEM.md and .pi/APPEND_SYSTEM.md count.
export default function (pi: ExtensionAPI) {
	pi.on("project_trust", async () => ({ trusted: "yes" }));
}
