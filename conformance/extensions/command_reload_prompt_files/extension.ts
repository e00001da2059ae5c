// A reload reads the system prompt's files again (Pi's resource loader reloads them):
// `/rewrite` changes the project's .pi/SYSTEM.md and the file `--system-prompt` names, adds
// .pi/APPEND_SYSTEM.md, then reloads; the next request's prompt is built from what the reload
// read (a flag given still stops its file's discovery). `/restore` puts the files back for the
// next run.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("rewrite", {
		description: "Rewrite the prompt files and reload",
		handler: async (_args, ctx) => {
			writeFileSync(join(ctx.cwd, ".pi", "SYSTEM.md"), "Second project prompt.\n");
			writeFileSync(join(ctx.cwd, ".pi", "APPEND_SYSTEM.md"), "Added addendum.\n");
			writeFileSync(join(ctx.cwd, "notes", "prompt.md"), "Second flag prompt.");
			await ctx.reload();
		},
	});
	pi.registerCommand("restore", {
		description: "Put the prompt files back",
		handler: async (_args, ctx) => {
			writeFileSync(join(ctx.cwd, ".pi", "SYSTEM.md"), "First project prompt.\n");
			rmSync(join(ctx.cwd, ".pi", "APPEND_SYSTEM.md"), { force: true });
			writeFileSync(join(ctx.cwd, "notes", "prompt.md"), "First flag prompt.");
		},
	});
}
