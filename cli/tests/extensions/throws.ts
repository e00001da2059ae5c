// An extension whose factory throws: Pi reports it as a failed load and does not run.
export default function () {
	throw new Error("no greeting today");
}
