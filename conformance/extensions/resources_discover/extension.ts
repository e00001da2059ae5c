// Gives the session a skill folder and a prompt-template folder of its own through
// `resources_discover` (their paths relative to the project, as a package's extension would
// name its own folders): the skills reach the system prompt, the templates expand in prompts,
// and RPC `get_commands` lists both with where they came from. A skill of a name the user's
// skills have already stays the user's.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("resources_discover", async (event) => {
		pi.appendEntry("discovered", { reason: event.reason });
		return {
			skillPaths: [`${event.cwd}/ext-res/skills`, `${event.cwd}/ext-res/lone.md`],
			promptPaths: [`${event.cwd}/ext-res/prompts`],
		};
	});
}
