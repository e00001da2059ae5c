// A reload reads the context files again (Pi's resource loader reloads them): `/rewrite` adds a
// line to the project's AGENTS.md and reloads, and the next request's system prompt holds the new text
// (the first request held the old one).
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("rewrite", {
		description: "Rewrite AGENTS.md and reload",
		handler: async (_args, ctx) => {
			appendFileSync(join(ctx.cwd, "AGENTS.md"), "More rules: answer in one word.\n");
			await ctx.reload();
		},
	});
}
