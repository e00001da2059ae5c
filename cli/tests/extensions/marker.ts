// What an untrusted project might hide in .pi/extensions: loading it writes a file.
import { writeFileSync } from "node:fs";

export default function () {
	writeFileSync(process.env.PI_TEST_MARKER ?? "marker.txt", "loaded");
}
