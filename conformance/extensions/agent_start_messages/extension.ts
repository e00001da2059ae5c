// Two before_agent_start handlers of one extension, each adding a message: Pi keeps one message
// per handler that returns one, in order, so both reach the session and the model.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("before_agent_start", async (event) => ({
		message: { customType: "first-note", content: `first sees: ${event.prompt}`, display: true },
	}));
	pi.on("before_agent_start", async () => ({
		message: { customType: "second-note", content: "second note", display: false, details: { n: 2 } },
	}));
}
