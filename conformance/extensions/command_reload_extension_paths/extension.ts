// A reload loads the extensions the settings name since (Pi's resource loader resolves the
// extension paths again): `/add-extension` adds added.ts to the agent directory's settings'
// `extensions` and reloads; the added extension's command runs and its tool is declared.
// `/restore` puts the settings back for the next run.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

function setExtensions(paths: string[]) {
	const file = join(process.env.PI_CODING_AGENT_DIR ?? "", "settings.json");
	const settings = JSON.parse(readFileSync(file, "utf8"));
	settings.extensions = paths;
	writeFileSync(file, JSON.stringify(settings, null, 2));
}

export default function (pi: ExtensionAPI) {
	pi.registerCommand("add-extension", {
		description: "Name another extension in the settings and reload",
		handler: async (_args, ctx) => {
			setExtensions([join(ctx.cwd, "added.ts")]);
			await ctx.reload();
		},
	});
	pi.registerCommand("restore", {
		description: "Put the settings back",
		handler: async () => {
			setExtensions([]);
		},
	});
}
