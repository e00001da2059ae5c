// Overrides Pi's cache-warming decision: notes the decision it was shown, then asks for a warm.
export default function (pi) {
	pi.on("cache_warming_decision", (event) => {
		pi.appendEntry("warming-decision", { action: event.action });
		return { action: "warm" };
	});
}
