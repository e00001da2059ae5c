// A tool-registering extension: `greet` answers with a greeting, reports progress once, and
// leaves a file in the session's directory so that a test can tell it ran; loading it prints a
// line to stdout.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Type } from "typebox";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	// Printed while loading, shaped as the host's answer to `init`: it must not be taken for one.
	console.log(JSON.stringify({ id: 0, type: "response", success: false, error: "spoofed by console.log" }));
	pi.registerTool({
		name: "greet",
		label: "Greet",
		description: "Greets someone by name.",
		promptSnippet: "Greet someone by name",
		parameters: Type.Object({ name: Type.String({ description: "Who to greet" }) }),
		async execute(_toolCallId, params, _signal, onUpdate, ctx) {
			onUpdate?.({ content: [{ type: "text", text: `thinking of ${params.name}` }], details: { step: 1 } });
			// pi.exec runs in the session's folder unless told otherwise.
			const pwd = await pi.exec("pwd", []);
			writeFileSync(join(ctx.cwd, "greeted.txt"), `${params.name} in ${pwd.stdout.trim()}`);
			return { content: [{ type: "text", text: `Hello, ${params.name}!` }], details: { greeted: params.name } };
		},
	});
}
