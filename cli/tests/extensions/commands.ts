// Two commands: `hello`, and `mcp`, which takes the name of Pi 1.5.2's built-in `/mcp` (Pi then
// leaves its built-in extension out).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("hello", {
		description: "Says hello",
		handler: async (args) => {
			pi.appendEntry("hello", { args });
		},
	});
	pi.registerCommand("mcp", { description: "Mine, not Pi's", handler: async () => {} });
}
