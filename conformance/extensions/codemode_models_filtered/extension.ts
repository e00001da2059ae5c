// Nothing registered: the case's auth.json logs `openai` in with a ChatGPT subscription (an
// OAuth credential) and `github-copilot` with a token naming its available models, whose
// providers' filters decide which of their typed models are available.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (_pi: ExtensionAPI) {}
