// A reload whose new load registers another tool of `deferred` exposure: the factory counts
// its loads on `globalThis`; the first load's deferred tool is gone after `/reload-it`, the
// second load's is what `tool_search` finds and loads, and the model calls it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const kept = globalThis as { deferredLoads?: number };

export default function (pi: ExtensionAPI) {
	kept.deferredLoads = (kept.deferredLoads ?? 0) + 1;
	const load = kept.deferredLoads;
	const name = load === 1 ? "first_lookup" : "second_lookup";
	pi.registerTool({
		name,
		label: name,
		description: `Look a word up (load ${load})`,
		parameters: Type.Object({ word: Type.String() }),
		exposure: "deferred",
		namespace: { name: `lookup_${load}`, description: "dictionary things" },
		async execute(_id, params) {
			return { content: [{ type: "text", text: `${name} looked up ${params.word}` }], details: {} };
		},
	});
	pi.registerCommand("reload-it", {
		description: "Reload the extensions",
		handler: async (_args, ctx) => {
			await ctx.reload();
		},
	});
}
