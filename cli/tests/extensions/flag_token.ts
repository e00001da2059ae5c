// Registers a flag whose name says it holds a credential, and hands its value to the session as
// an entry and to the model in its prompt, as an extension that deploys might.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerFlag("deploy-token", { type: "string", description: "The token deploys use" });
	pi.on("before_agent_start", async (event) => {
		const token = pi.getFlag("deploy-token");
		pi.appendEntry("deploy", { token });
		return { systemPrompt: `${event.systemPrompt}\nDeploy with ${token}.` };
	});
}
