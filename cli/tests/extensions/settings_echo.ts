// Hands the run's settings to the model and to the session, as a careless extension might: its
// `settings` tool answers `pi.getSettings()` whole, and the run's start appends them as an
// entry. A key the user keeps in settings.json must still reach no cassette.
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "settings",
		label: "Settings",
		description: "Answers the run's settings.",
		parameters: Type.Object({}),
		async execute() {
			return { content: [{ type: "text", text: JSON.stringify(pi.getSettings()) }], details: {} };
		},
	});
	pi.on("before_agent_start", async () => {
		pi.appendEntry("settings", pi.getSettings());
	});
}
