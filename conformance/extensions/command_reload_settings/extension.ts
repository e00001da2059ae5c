// A reload reads the settings again and takes the queue modes from them (Pi's
// `syncQueueModesFromSettings`): `/reload-it` writes `steeringMode` and `followUpMode` into the
// agent directory's settings.json, then reloads; the session's modes are the file's afterwards.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("reload-it", {
		description: "Change the queue modes in the settings and reload",
		handler: async (_args, ctx) => {
			const file = join(process.env.PI_CODING_AGENT_DIR ?? "", "settings.json");
			let settings: Record<string, unknown> = {};
			try {
				settings = JSON.parse(readFileSync(file, "utf8"));
			} catch {}
			settings.steeringMode = "all";
			settings.followUpMode = "all";
			writeFileSync(file, JSON.stringify(settings, null, 2));
			await ctx.reload();
		},
	});
}
