// Handlers that throw at hook points other than commands (input, before_agent_start, tool_result,
// turn_end): Pi reports each error (stderr in print mode, an extension_error line in RPC) and runs on.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("input", async (event) => {
		throw new Error(`input broke on ${event.text}`);
	});
	pi.on("before_agent_start", async () => {
		throw new Error("start broke");
	});
	pi.on("before_agent_start", async () => ({
		message: { customType: "still-here", content: "the second handler ran", display: true },
	}));
	pi.on("tool_result", async (event) => {
		throw new Error(`tool_result broke for ${event.toolName}`);
	});
	pi.on("turn_end", async () => {
		throw new Error("turn_end broke");
	});
}
