// Registers `gateway` (the kit's mock behind it, with a literal key and a header) while
// loading; at the first turn's end its handler finds the gateway's model in ctx.modelRegistry
// and sets it with pi.setModel: the run's next request goes to the gateway. An entry records
// what the registry found and what setModel answered.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	pi.registerProvider("gateway", {
		baseUrl: models.providers.mock.baseUrl,
		api: "openai-completions",
		apiKey: "gw-literal-key-0123456789",
		headers: { "x-gateway": "set-model" },
		models: [
			{
				id: "gw-model",
				name: "Gateway Model",
				reasoning: false,
				input: ["text"],
				cost: { input: 3, output: 4, cacheRead: 0, cacheWrite: 0 },
				contextWindow: 64000,
				maxTokens: 4096,
			},
		],
	});
	let turns = 0;
	pi.on("turn_end", async (_event, ctx) => {
		turns += 1;
		if (turns !== 1) return;
		const target = ctx.modelRegistry.find("gateway", "gw-model");
		const available = ctx.modelRegistry.getAvailable().map((m) => `${m.provider}/${m.id}`);
		const changed = target ? await pi.setModel(target) : "not found";
		pi.appendEntry("gateway", { found: !!target, available, changed, now: ctx.model?.id });
	});
}
