// Registers `typed` with two image models, one of an API it implements and one of an API it
// does not, and `bare`, whose image model has no implementation at all. The implementation
// answers with two images (a one-pixel PNG each) and a text block, and its usage; a prompt
// asking it to fail makes it throw.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	const baseUrl = models.providers.mock.baseUrl;
	const cost = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 };
	pi.registerProvider("typed", {
		baseUrl,
		api: "openai-completions",
		apiKey: "typed-key",
		models: [
			{ id: "typed-img", name: "Typed Image", type: "image", api: "typed-images", input: ["text", "image"], output: ["image", "text"], cost },
			{ id: "typed-other", name: "Other Image", type: "image", api: "other-images", input: ["text"], output: ["image"], cost },
			{ id: "typed-cls", name: "Typed Classifier", type: "classifier", api: "typed-classify", input: ["text"], cost, contextWindow: 2000 },
		],
		images: {
			"typed-images": {
				async generateImages(model, context, options) {
					const prompt = context.input.find((block) => block.type === "text")?.text ?? "";
					if (prompt === "fail") throw new Error("painter broke");
					return {
						api: model.api,
						provider: model.provider,
						model: model.id,
						output: [
							{ type: "image", data: PIXEL, mimeType: "image/png" },
							{ type: "text", text: `painted ${prompt}` },
							{ type: "image", data: PIXEL, mimeType: "image/png" },
						],
						usage: { input: 5, output: 100, cacheRead: 0, cacheWrite: 0, totalTokens: 105, cost: { input: 0.5, output: 1, cacheRead: 0, cacheWrite: 0, total: 1.5 } },
						stopReason: "stop",
						timestamp: 0,
						seen: { key: options?.apiKey === "typed-key", references: context.input.filter((block) => block.type === "image").length },
					};
				},
			},
		},
	} as any);
	pi.registerProvider("bare", {
		baseUrl,
		api: "openai-completions",
		apiKey: "bare-key",
		models: [{ id: "bare-img", name: "Bare Image", type: "image", api: "bare-images", input: ["text"], output: ["image"], cost }],
	} as any);
}
