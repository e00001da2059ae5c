#!/usr/bin/env bash
# Records the local-llm suite's cassettes (evals/cassettes/local-llm/) from the real small model
# that scripts/llm/ci-llm.sh serves on 127.0.0.1.
#
#   scripts/evals/record-local-llm.sh [TARGET_DIR]   (default: target/debug, built first)
# env: LLM_BASE_URL  the server's /v1 URL (default: started with scripts/llm/ci-llm.sh)
set -euo pipefail
# The system prompt names where Pi's documentation is (beside the binary): a fixed place keeps
# the recording machine's paths out of the cassettes.
export PI_PACKAGE_DIR=/usr/lib/pi
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-}
if [ -z "$bin" ]; then
  (cd "$root" && cargo build -q -p pi-cli --bins)
  bin="$root/target/debug"
fi
if [ -z "${LLM_BASE_URL:-}" ]; then
  eval "$(bash "$root/scripts/llm/ci-llm.sh" start)"
fi
# The declared window is the one the server serves: Pi 1.5.2 asks for the model's output limit
# clamped to what the window leaves after the context and a 4,096-token margin.
context_window=8192
served=$(python3 -c 'import json, sys, urllib.request
print(json.load(urllib.request.urlopen(sys.argv[1].removesuffix("/v1") + "/props"))["default_generation_settings"]["n_ctx"])' \
  "$LLM_BASE_URL")
if [ "$served" != "$context_window" ]; then
  echo "the server at $LLM_BASE_URL serves a $served-token context, not $context_window (LLM_CTX)" >&2
  exit 1
fi
agent=$(mktemp -d)
trap 'rm -rf "$agent"' EXIT
cat > "$agent/models.json" <<JSON
{"providers": {"local": {"baseUrl": "$LLM_BASE_URL", "api": "openai-completions", "apiKey": "local",
  "compat": {"maxTokensField": "max_tokens"},
  "models": [{"id": "smollm2-135m-instruct", "name": "SmolLM2 135M", "contextWindow": $context_window, "maxTokens": 64}]}}}
JSON
rm -rf "$root/evals/cassettes/local-llm"
PI_CODING_AGENT_DIR="$agent" "$bin/pi" eval "$root/evals/suites/local-llm.toml" \
  --record "$root/evals/cassettes" --jobs 1 --progress plain --out "$(mktemp -d)"
echo "recorded into $root/evals/cassettes/local-llm" >&2
