// Reads the state getters at several hook points and reports what they answer as a notify
// (in RPC mode, an extension_ui_request line), so the trace shows them. What differs from run to
// run is left out: entry ids become positions among the entries, timestamps and durations are
// dropped, the documentation's paths are written as the kit writes them (its rule needs the
// line's start, which a JSON string hides), and a context usage that is only an estimate (no answer yet) shows no token count, as
// the estimate counts the system prompt, which holds the run's folder.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

const DOCS = /(- (?:Main documentation|Additional docs|Examples): )\S*\/(README\.md|docs|examples)\b/g;

function portable(value: unknown): unknown {
	if (typeof value === "string") return value.replace(DOCS, "$1<DOC>/$2");
	if (Array.isArray(value)) return value.map(portable);
	if (value && typeof value === "object") {
		const out: Record<string, unknown> = {};
		for (const [key, field] of Object.entries(value)) {
			if (key !== "timestamp" && key !== "durationMs") out[key] = portable(field);
		}
		return out;
	}
	return value;
}

export default function (pi: ExtensionAPI) {
	const report = (point: string, ctx: ExtensionContext, extra: Record<string, unknown> = {}) => {
		const sm = ctx.sessionManager;
		const entries = sm.getEntries();
		const at = (id: string | null | undefined) => (id == null ? null : entries.findIndex((e) => e.id === id));
		const seen = entries.map((e) => ({ ...(portable(e) as object), id: at(e.id), parentId: at(e.parentId) }));
		const header = sm.getHeader();
		const usage = ctx.getContextUsage();
		const answered = entries.some((e) => e.type === "message" && e.message.role === "assistant");
		type Node = { entry: { id: string }; label?: string; labelTimestamp?: string; children: Node[] };
		const shape = (nodes: Node[]): unknown[] =>
			nodes.map((n) => ({ id: at(n.entry.id), label: n.label ?? null, labelled: n.labelTimestamp !== undefined, children: shape(n.children) }));
		const projection = sm.buildSessionProjection();
		ctx.ui.notify(
			JSON.stringify({
				point,
				...extra,
				isIdle: ctx.isIdle(),
				hasPendingMessages: ctx.hasPendingMessages(),
				model: ctx.model ?? null,
				thinkingLevel: pi.getThinkingLevel(),
				activeTools: pi.getActiveTools(),
				cwdIsProject: ctx.cwd === header?.cwd,
				sessionName: sm.getSessionName() ?? null,
				sessionFile: sm.getSessionFile() ?? null,
				header: header ? { type: header.type, version: header.version } : null,
				leaf: at(sm.getLeafId()),
				branch: sm.getBranch().map((e) => at(e.id)),
				entries: seen,
				tree: shape(sm.getTree() as Node[]),
				contextEntries: sm.buildContextEntries().map((e) => at(e.id)),
				projection: {
					entries: projection.entries.map((e) => ({ id: at(e.sourceEntry.id), messages: e.messages.length })),
					roles: projection.messages.map((m) => m.role),
					thinkingLevel: projection.thinkingLevel,
					model: projection.model,
				},
				contextUsage: usage && !answered ? { ...usage, tokens: typeof usage.tokens, percent: typeof usage.percent } : (usage ?? null),
				systemPrompt: portable(ctx.getSystemPrompt()),
			}),
			"info",
		);
	};
	pi.on("input", (event, ctx) => {
		report("input", ctx, { source: event.source, text: event.text });
		return { action: "continue" };
	});
	pi.on("before_agent_start", (_event, ctx) => report("before_agent_start", ctx));
	pi.on("context", (_event, ctx) => report("context", ctx));
	pi.on("tool_call", (event, ctx) => report("tool_call", ctx, { toolCallId: event.toolCallId }));
	pi.on("tool_result", (event, ctx) => report("tool_result", ctx, { toolCallId: event.toolCallId }));
	pi.on("turn_end", (event, ctx) => report("turn_end", ctx, { turnIndex: event.turnIndex }));
}
