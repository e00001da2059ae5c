// Changes the model mid run, at the first turn's end: first to a model whose provider has no
// auth (refused: false, nothing changes), then to the registry's mock-model (true: a
// `model_change` entry, the thinking level clamped to what mock-model supports, and the run's
// next request goes to mock-model). An entry records what each call answered and the model
// the handler then reads.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("turn_end", async (_event, ctx) => {
		turns += 1;
		if (turns !== 1) return;
		const noKey = await pi.setModel({ ...ctx.model!, provider: "nokey", id: "nokey-model" });
		const target = ctx.modelRegistry.find("mock", "mock-model");
		const changed = target ? await pi.setModel(target) : "not found";
		pi.appendEntry("set-model", { noKey, changed, now: ctx.model?.id, level: pi.getThinkingLevel() });
	});
}
