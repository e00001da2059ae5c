#!/usr/bin/env bash
# Records the extension corpus (cassettes/corpus-extensions/): runs of the extension
# conformance cases named below (TypeScript extensions loaded by the extension host, the kit's
# scripted mock over real HTTP on 127.0.0.1), each recorded by this build's `pi --record` as
# `<case>.<run>.jsonl`. Between them they hold every kind of line an extension puts in a
# cassette: hook points and their decisions, a registered tool's actions, RPC dialogs and
# notices, a command that replaces the session or reloads the extensions (and the context
# files, skills and templates; a session replaced after a reload), MCP servers registered later and their tools, provider hooks, `user_bash` handlers,
# tools of every exposure.
# A replay needs neither Node nor the extensions; recording needs both:
#
#   PI_EXTENSION_HOST_PI_DIR=<a Pi 1.5.2 install> scripts/record-extension-corpus.sh [CASE...]
#
# Then `pi replay --check cassettes/corpus-extensions` must pass; commit the cassettes with the
# change that made them differ.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
corpus="$root/cassettes/corpus-extensions"
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  cases=(tool_context confirm_gate command_new_session command_reload command_reload_context
    command_reload_skills command_reload_new_session mcp_register_later input_transform
    provider_hooks user_bash tool_exposures)
fi
cargo build --release --quiet --bin pi --manifest-path "$root/Cargo.toml"
pi="$root/target/release/pi"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for name in "${cases[@]}"; do
  rm -f "$corpus/$name".*.jsonl
  : > "$work/runs"
  cat > "$work/pi" <<WRAP
#!/bin/sh
echo >> '$work/runs'
exec '$pi' --record '$corpus/$name.'\$(wc -l < '$work/runs').jsonl "\$@"
WRAP
  chmod +x "$work/pi"
  python3 "$root/conformance/extensions/run.py" compare --pi "$work/pi" --case "$name"
done
"$pi" replay --check "$corpus"
