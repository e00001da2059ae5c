// Hears the session's model and thinking-level changes (`model_select`, `thinking_level_select`)
// that its own calls cause, writing an entry for each: a level set before the run starts, then
// a model set at the first turn's end (the level clamped to the new model's).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("model_select", async (event) =>
		pi.appendEntry("model", { model: event.model.id, previous: event.previousModel?.id, source: event.source }),
	);
	pi.on("thinking_level_select", async (event) =>
		pi.appendEntry("thinking", { level: event.level, previous: event.previousLevel }),
	);
	pi.on("before_agent_start", async () => {
		pi.setThinkingLevel("low");
	});
	pi.on("turn_end", async (_event, ctx) => {
		turns += 1;
		if (turns !== 1) return;
		const target = ctx.modelRegistry.find("mock", "mock-model");
		if (target) await pi.setModel(target);
	});
}
