// A reload activates the tools the settings newly add to `defaultTools` (Pi's reload compares
// the defaults before and after reading the settings again): `/narrow` turns every tool but
// `read` off, `/add-tools` writes defaults that drop `bash` and add `grep` and `find`, then
// reloads. The added ones are active after the reload; `edit`, a default before too, stays off.
// `/restore` puts the settings back for the next run.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

function setDefaults(tools: string[]) {
	const file = join(process.env.PI_CODING_AGENT_DIR ?? "", "settings.json");
	const settings = JSON.parse(readFileSync(file, "utf8"));
	settings.defaultTools = tools;
	writeFileSync(file, JSON.stringify(settings, null, 2));
}

export default function (pi: ExtensionAPI) {
	pi.registerCommand("narrow", {
		description: "Only read",
		handler: async () => {
			pi.setActiveTools(["read"]);
		},
	});
	pi.registerCommand("add-tools", {
		description: "Change the default tools and reload",
		handler: async (_args, ctx) => {
			setDefaults(["read", "edit", "grep", "find"]);
			await ctx.reload();
		},
	});
	pi.registerCommand("restore", {
		description: "Put the default tools back",
		handler: async () => {
			setDefaults(["read", "bash", "edit"]);
		},
	});
}
