// Registers `gateway`, a provider of its own in front of the test's mock (found through the
// agent dir's models.json), with a key written literally, a header and one model; and
// `scripted`, a provider whose requests stream through the extension's own function; and
// `native`, a provider object with its own functions.
import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const MODEL = {
	reasoning: false,
	input: ["text" as const],
	cost: { input: 3, output: 4, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 64000,
	maxTokens: 4096,
};

export default function (pi: ExtensionAPI) {
	const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
	pi.registerProvider("gateway", {
		baseUrl: models.providers.mock.baseUrl,
		api: "openai-completions",
		apiKey: "gw-planted-literal-0123456789abcdef",
		headers: { "x-gateway": "e2e" },
		models: [{ id: "gw-model", name: "Gateway Model", ...MODEL }],
	});
	pi.registerProvider("scripted", {
		baseUrl: "http://127.0.0.1:9",
		api: "scripted-api",
		apiKey: "unused",
		models: [{ id: "scripted-model", name: "Scripted", ...MODEL }],
		streamSimple: () => {
			throw new Error("never called under the harness");
		},
	});
	const nativeModel = { id: "native-model", name: "Native", api: "openai-completions", provider: "native", baseUrl: "http://127.0.0.1:9/v1", ...MODEL };
	pi.registerProvider({
		id: "native",
		name: "Native",
		baseUrl: "http://127.0.0.1:9/v1",
		auth: {},
		getModels: () => [nativeModel],
		stream: () => {
			throw new Error("never called under the harness");
		},
		streamSimple: () => {
			throw new Error("never called under the harness");
		},
	} as never);
}
