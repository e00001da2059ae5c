// Trusts the project it is asked about and asks Pi to remember that (Pi 1.5.2's project_trust).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("project_trust", async () => ({ trusted: "yes", remember: true }));
}
