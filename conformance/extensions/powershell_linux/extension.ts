// Pi 1.5.2 registers `powershell`, Windows' shell tool, on every platform, inactive: before each
// run starts this reports what the tool getters say of it (its entry whole) and activates it
// when it is not active, so that the run's request declares it and the model calls it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("before_agent_start", () => {
		const all = pi.getAllTools();
		const active = pi.getActiveTools();
		pi.appendEntry("tools", {
			all: all.map((tool) => tool.name),
			powershell: all.find((tool) => tool.name === "powershell") ?? null,
			active,
		});
		if (!active.includes("powershell")) pi.setActiveTools([...active, "powershell"]);
	});
}
