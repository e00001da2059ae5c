// A reload finds the skills and prompt templates again (Pi's resource loader reloads them):
// `/swap` removes a skill, changes one, adds one, changes a template and adds one, then
// reloads; the prompts after it expand with what the reload found, and the system prompt lists
// the new skills. The command line's `--no-skills`, `--skill`, `--no-prompt-templates` and
// `--prompt-template` still apply to what it finds. `/restore` puts the files back for the
// next run.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const skill = (name: string, description: string, body: string) =>
	`---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`;

function write(cwd: string, path: string, text: string) {
	const file = join(cwd, ".pi", path);
	mkdirSync(join(file, ".."), { recursive: true });
	writeFileSync(file, text);
}

export default function (pi: ExtensionAPI) {
	pi.registerCommand("swap", {
		description: "Change the skills and templates, then reload",
		handler: async (_args, ctx) => {
			rmSync(join(ctx.cwd, ".pi", "skills", "old-skill"), { recursive: true, force: true });
			write(ctx.cwd, "skills/new-skill/SKILL.md", skill("new-skill", "The new skill.", "Do the new thing."));
			write(ctx.cwd, "skills/kept/SKILL.md", skill("kept", "The kept skill, changed.", "Kept body, changed."));
			write(ctx.cwd, "prompts/greet.md", "---\ndescription: Greet again\n---\nSay hello again to $1.\n");
			write(ctx.cwd, "prompts/added.md", "Added template for $@.\n");
			await ctx.reload();
		},
	});
	pi.registerCommand("restore", {
		description: "Put the skills and templates back",
		handler: async (_args, ctx) => {
			rmSync(join(ctx.cwd, ".pi", "skills", "new-skill"), { recursive: true, force: true });
			rmSync(join(ctx.cwd, ".pi", "prompts", "added.md"), { force: true });
			write(ctx.cwd, "skills/old-skill/SKILL.md", skill("old-skill", "The old skill.", "Do the old thing."));
			write(ctx.cwd, "skills/kept/SKILL.md", skill("kept", "The kept skill.", "Kept body."));
			write(ctx.cwd, "prompts/greet.md", "---\ndescription: Greet\n---\nSay hello to $1.\n");
		},
	});
}
