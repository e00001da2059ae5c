// Harbor's turn cap and a gate: `before_agent_start` rewrites the system prompt (reading the
// state the handlers may read: the active tools and the model), a `tool_call` gate blocks a
// bash command that removes files, and `turn_end` records the turn and aborts the run after
// the second one.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const MAX_TURNS = 2;

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("before_agent_start", (event, ctx) => ({
		systemPrompt: `${event.systemPrompt}\n\nCapped at ${MAX_TURNS} turns on ${ctx.model?.id}; tools: ${pi.getActiveTools().join(",")}.`,
	}));
	pi.on("tool_call", (event) => {
		if (event.toolName === "bash" && String(event.input.command).includes("rm -rf")) {
			return { block: true, reason: "rm -rf is not allowed here" };
		}
	});
	pi.on("turn_end", (_event, ctx) => {
		turns += 1;
		pi.appendEntry("turn-cap", { turns });
		if (turns >= MAX_TURNS) ctx.abort();
	});
}
