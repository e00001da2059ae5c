// Rewrites the system prompt before the agent starts and stops the run after two turns (the
// pattern Harbor uses to cap turns).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const MAX_TURNS = 2;

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("before_agent_start", async (event) => ({
		systemPrompt: `${event.systemPrompt}\n\nYou have at most ${MAX_TURNS} turns.`,
	}));
	pi.on("turn_end", async (_event, ctx) => {
		turns += 1;
		if (turns >= MAX_TURNS) ctx.abort();
	});
}
