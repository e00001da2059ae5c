// A tool's `execute` registers providers by name: one Pi's model runtime refuses (`streamSimple`
// with no provider-level `api`), whose error Pi's `pi.registerProvider` throws into `execute`,
// so the call's result is that error and the provider is not registered; and one whose id is
// blank, which Pi refuses only for a provider object, so it is registered (RPC's model list).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const model = (id: string) => ({
	id,
	name: id,
	api: "openai-completions" as const,
	reasoning: false,
	input: ["text" as const],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 1000,
	maxTokens: 100,
});

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "connect",
		label: "connect",
		description: "Connects a gateway with its own stream.",
		parameters: Type.Object({}),
		execute: async () => {
			pi.registerProvider("streamer", {
				baseUrl: "http://127.0.0.1:9/v1",
				apiKey: "stream-key-0123456789",
				streamSimple: (() => {
					throw new Error("never streamed");
				}) as any,
				models: [model("stream-model")],
			});
			return { content: [{ type: "text", text: "connected" }], details: {} };
		},
	});
	pi.registerTool({
		name: "blank",
		label: "blank",
		description: "Connects a gateway with a blank id.",
		parameters: Type.Object({}),
		execute: async () => {
			pi.registerProvider(" ", {
				baseUrl: "http://127.0.0.1:9/v1",
				apiKey: "blank-key-0123456789",
				models: [model("blank-model")],
			});
			return { content: [{ type: "text", text: "registered" }], details: {} };
		},
	});
}
