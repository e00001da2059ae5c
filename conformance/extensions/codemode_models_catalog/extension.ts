// Registers `typed`, a provider with a chat model, a classifier and an image model (the image
// model with a header a script must not see) and the implementations of their APIs; the
// kit's models.json adds a classifier and an image model to `mock`. The scripts read the
// typed catalog through codemode's `models.*`.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const cost = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 };
	pi.registerProvider("typed", {
		baseUrl: models.providers.mock.baseUrl,
		api: "openai-completions",
		apiKey: "typed-key",
		models: [
			{ id: "typed-chat", name: "Typed Chat", reasoning: false, input: ["text"], cost, contextWindow: 1000, maxTokens: 100 },
			{ id: "typed-cls", name: "Typed Classifier", type: "classifier", api: "typed-classify", input: ["text"], cost, contextWindow: 2000 },
			{ id: "typed-img", name: "Typed Image", type: "image", api: "typed-images", input: ["text", "image"], output: ["image"], cost, headers: { "x-typed": "secret" } },
		],
		classifiers: {
			"typed-classify": {
				async classify(model, context) {
					const answers = Object.fromEntries(Object.keys(context.questions).map((id) => [id, { label: "yes" }]));
					return { api: model.api, provider: model.provider, model: model.id, answers, stopReason: "stop", timestamp: 0 };
				},
			},
		},
		images: {
			"typed-images": {
				async generateImages(model) {
					return { api: model.api, provider: model.provider, model: model.id, output: [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }], stopReason: "stop", timestamp: 0 };
				},
			},
		},
	} as any);
}
