// A `before_agent_start` handler that holds the prompt "slow" up for 5 seconds, so its RPC
// `started` answer waits for a run that has not started yet.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("before_agent_start", async (event) => {
		if (event.prompt === "slow") await new Promise((resolve) => setTimeout(resolve, 5000));
	});
}
