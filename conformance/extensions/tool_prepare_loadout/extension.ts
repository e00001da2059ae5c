// A tool of the extension's own with a `prepareLoadout` hook (not codemode's): it describes the
// declared tools anew (naming what the loadout holds) and hides the `write` declaration (the
// prompt's tools and rules leave it out, the transcript keeps it). At the first turn's end the
// extension changes the active tools, so the next turn's declarations follow the new loadout.
// The hook answers by the loadout alone, as Pi's own (codemode's) does.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "curator",
		label: "Curator",
		description: "Curates the tools.",
		promptSnippet: "Curate the tools",
		promptGuidelines: ["Ask the curator first."],
		parameters: { type: "object", properties: {} } as any,
		async execute() {
			return { content: [{ type: "text", text: "curated" }], details: {} };
		},
		prepareLoadout(loadout) {
			const declared = loadout.declared.map((tool) => tool.name);
			const callable = loadout.callable.map((tool) => tool.name);
			const registered = loadout.registered.map((tool) => tool.name).filter((name) => !["powershell", "codemode"].includes(name));
			return {
				descriptions: {
					curator: `Curates ${declared.join(",")}; callable ${callable.join(",")}; registered ${registered.join(",")}; read is ${loadout.getExposure("read")}; write's rules ${JSON.stringify(loadout.getPromptGuidelines("write"))}`,
					read: "Reads a file (curated).",
				},
				hiddenDeclarations: ["write"],
			};
		},
	});
	let turns = 0;
	pi.on("turn_end", () => {
		turns += 1;
		if (turns === 1) pi.setActiveTools(["read", "curator", "grep"]);
	});
}
