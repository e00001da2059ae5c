// Registers `typed` with two classifier models, one of an API it implements and one of an API
// it does not, and `bare`, whose classifier model has no implementation at all. The
// implementation answers every question "yes" after a short wait, reports its usage, and says
// how many of its calls were in flight at once and whether it got the provider's key and the
// model's headers; a context whose state asks it to fail makes it throw.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const baseUrl = models.providers.mock.baseUrl;
	const cost = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 };
	let active = 0;
	let peak = 0;
	pi.registerProvider("typed", {
		baseUrl,
		api: "openai-completions",
		apiKey: "typed-key",
		models: [
			{ id: "typed-cls", name: "Typed Classifier", type: "classifier", api: "typed-classify", input: ["text"], cost, contextWindow: 2000, headers: { "x-typed": "cls" } },
			{ id: "typed-other", name: "Other Classifier", type: "classifier", api: "other-classify", input: ["text"], cost, contextWindow: 2000 },
			{ id: "typed-img", name: "Typed Image", type: "image", api: "typed-images", input: ["text"], output: ["image"], cost },
		],
		classifiers: {
			"typed-classify": {
				async classify(model, context, options) {
					active++;
					peak = Math.max(peak, active);
					await new Promise((resolve) => setTimeout(resolve, 30));
					active--;
					if (context.state.fail) throw new Error("classifier broke");
					const answers = Object.fromEntries(Object.keys(context.questions).map((id) => [id, { label: "yes" }]));
					return {
						api: model.api,
						provider: model.provider,
						model: model.id,
						answers,
						usage: { input: 10, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 10, cost: { input: 0.25, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.25 } },
						stopReason: "stop",
						timestamp: 0,
						seen: { peak, key: options?.apiKey === "typed-key", headers: options?.headers ?? null },
					};
				},
			},
		},
	} as any);
	pi.registerProvider("bare", {
		baseUrl,
		api: "openai-completions",
		apiKey: "bare-key",
		models: [{ id: "bare-cls", name: "Bare Classifier", type: "classifier", api: "bare-classify", input: ["text"], cost, contextWindow: 2000 }],
	} as any);
}
