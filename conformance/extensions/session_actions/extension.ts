// Asks for the session's thinking level and name from its handlers: before the run starts
// (the first request already thinks "high"), while a tool result is final (a new name, mid run)
// and at the first turn's end (a level the model lacks, clamped to the one in force, so nothing
// is written; then "low", which the next turn's request sends).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("before_agent_start", async () => {
		pi.setThinkingLevel("high");
		pi.setSessionName("  Reading\r\na.txt  ");
	});
	pi.on("tool_result", async () => {
		pi.setSessionName("After the read");
	});
	pi.on("turn_end", async () => {
		turns += 1;
		if (turns !== 1) return;
		pi.setThinkingLevel("xhigh");
		pi.setThinkingLevel("low");
	});
}
