// Tools of every exposure Pi 1.5 has, one registered inactive, and one that calls the others
// through `ctx.executeTool`: which are active, declared, listed and callable, at the start and
// under `--tools` and `--exclude-tools`.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
	const tool = (name: string, extra: Record<string, unknown>) =>
		pi.registerTool({
			name,
			label: name,
			description: `the ${name} tool`,
			promptSnippet: `${name} things`,
			parameters: Type.Object({ x: Type.String() }),
			async execute(_id, params) {
				return { content: [{ type: "text", text: `${name}(${params.x}) active=${pi.getActiveTools().join(",")}` }], details: {} };
			},
			...extra,
		});
	tool("quiet", { defaultActive: false });
	tool("later", { exposure: "deferred", namespace: { name: "ns_later", aliases: ["later"], description: "later things" } });
	tool("ghost", { exposure: "hidden" });
	tool("orch", { exposure: "model-only", annotations: { readOnlyHint: true } });
	tool("scripted", { exposure: "codemode" });
	pi.registerTool({
		name: "caller",
		label: "caller",
		description: "calls every other tool",
		parameters: Type.Object({}),
		async execute(_id, _params, _signal, _onUpdate, ctx) {
			const lines = [`callable: ${ctx.tools.map((t) => t.name).join(",")}`];
			for (const name of ["scripted", "later", "orch", "ghost", "quiet"]) {
				const outcome = await ctx.executeTool(name, { x: name });
				const text = outcome.result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
				lines.push(`${name}: ${outcome.isError ? "error" : "ok"} ${text}`);
			}
			return { content: [{ type: "text", text: lines.join("\n") }], details: {} };
		},
	});
	pi.on("before_agent_start", () => {
		pi.appendEntry("tools", {
			all: pi
				.getAllTools()
				.map((t) => [t.name, t.exposure, t.namespace ?? null, t.annotations ?? null]),
			active: pi.getActiveTools(),
		});
	});
}
