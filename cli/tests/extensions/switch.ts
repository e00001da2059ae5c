// Switches the model at the first turn's end: a provider without auth is refused, the mock's
// reasoner is set, and what each answered is written as an entry.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("turn_end", async (_event, ctx) => {
		turns += 1;
		if (turns !== 1) return;
		const reasoner = ctx.modelRegistry.find("mock", "mock-reasoner");
		const refused = await pi.setModel({ ...reasoner!, provider: "nokey" });
		const set = await pi.setModel(reasoner!);
		pi.appendEntry("switched", { refused, set, now: ctx.model?.id });
	});
}
