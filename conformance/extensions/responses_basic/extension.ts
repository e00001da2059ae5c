// No registrations: the case checks the Responses basics (text, a function call and its result,
// usage and stop reasons) with an extension loaded, as every case of the set has one.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (_pi: ExtensionAPI) {}
