// Answers RPC `bash` commands through `user_bash`: one with a result of its own (nothing runs),
// one through operations whose exec streams two chunks (an escape sequence among them, cleaned
// as Pi cleans a command's output) and exits 3, one whose handler throws, one whose handler
// returns neither a result nor operations; any other command runs locally. Each event is
// written down as an entry first, so its fields and its place are compared.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("user_bash", async (event) => {
		pi.appendEntry("user_bash", {
			command: event.command,
			excludeFromContext: event.excludeFromContext,
			cwdIsString: typeof event.cwd === "string",
		});
		if (event.command === "ext-result") {
			return { result: { output: "answered by the extension\n", exitCode: 0, cancelled: false, truncated: false } };
		}
		if (event.command === "ext-ops") {
			return {
				operations: {
					exec: async (command: string, _cwd: string, options: { onData: (data: Buffer) => void }) => {
						await new Promise((resolve) => setTimeout(resolve, 20));
						options.onData(Buffer.from(`ran ${command}\n`));
						options.onData(Buffer.from("\u001b[31mred\u001b[0m line\r\n"));
						return { exitCode: 3 };
					},
				},
			};
		}
		if (event.command === "ext-throw") throw new Error("no shell for you");
		if (event.command === "ext-invalid") return { result: { output: 42 } };
		return undefined;
	});
}
