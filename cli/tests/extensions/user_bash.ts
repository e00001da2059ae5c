// Answers RPC `bash` commands through `user_bash`: `given` with a result of its own, `streamed`
// through operations whose exec sends two chunks (one with an escape sequence) and exits 3,
// `long` through an exec whose output passes Pi's 2000-line bound, `waits` through an exec that
// waits for its signal, `paced` through an exec that says what it got, then waits (5 s at most)
// for the file `paced.go` in its cwd before it goes on, `refused` by throwing;
// anything else runs locally.
import fs from "node:fs";
import path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

type Exec = (
	command: string,
	cwd: string,
	options: { onData: (data: Buffer) => void; signal?: AbortSignal },
) => Promise<{ exitCode: number | null }>;

const through = (exec: Exec) => ({ operations: { exec } });

export default function (pi: ExtensionAPI) {
	pi.on("user_bash", async (event) => {
		if (event.command === "given") {
			return { result: { output: "given by the extension\n", exitCode: 0, cancelled: false, truncated: false } };
		}
		if (event.command === "streamed") {
			return through(async (command, cwd, { onData }) => {
				onData(Buffer.from(`ran ${command} in ${cwd === process.cwd() ? "the cwd" : cwd}\n`));
				onData(Buffer.from("\u001b[32mgreen\u001b[0m\r\n"));
				return { exitCode: 3 };
			});
		}
		if (event.command === "long") {
			return through(async (_command, _cwd, { onData }) => {
				const lines = Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`);
				onData(Buffer.from(`${lines.join("\n")}\n`));
				return { exitCode: null };
			});
		}
		if (event.command === "waits") {
			// Sends a chunk, then waits for the command's signal (RPC `abort_bash`).
			return through(async (_command, _cwd, { onData, signal }) => {
				onData(Buffer.from("waiting\n"));
				if (!signal?.aborted) await new Promise((resolve) => signal?.addEventListener("abort", resolve));
				return { exitCode: 0 };
			});
		}
		if (event.command === "paced") {
			return through(async (command, cwd, { onData }) => {
				onData(Buffer.from(`got ${JSON.stringify(command)}\n`));
				const go = path.join(cwd, "paced.go");
				for (let waited = 0; !fs.existsSync(go); waited += 20) {
					if (waited >= 5000) {
						onData(Buffer.from("nobody saw the first chunk\n"));
						return { exitCode: 1 };
					}
					await new Promise((resolve) => setTimeout(resolve, 20));
				}
				onData(Buffer.from("went on\n"));
				return { exitCode: 0 };
			});
		}
		if (event.command === "refused") throw new Error("not here");
		return undefined;
	});
}
