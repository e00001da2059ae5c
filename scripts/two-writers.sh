#!/usr/bin/env bash
# Two `pi --session FILE` started at once, 12 rounds, against the mock model (each run a bash
# call that takes 0.3 s, then an answer); per round, each run's exit code, the user messages in
# the file and whether it branched (an entry with two children).
#   scripts/two-writers.sh <pi> [extra pi flags, e.g. --wait-for-session]
# Needs pi-mock built (cargo build -p pi-testkit --bin pi-mock) and python3.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
pi="$(realpath "${1:?usage: two-writers.sh <pi> [flags]}")"
shift
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Enough steps for 24 runs whatever their order: every call gets a tool call or an answer.
python3 -c '
import json, sys
call = {"tool_calls": [{"id": "c", "name": "bash", "arguments": {"command": "sleep 0.3"}}]}
json.dump([call, {"text": ["done"]}] * 24, open(sys.argv[1], "w"))
' "$work/script.json"
cat > "$work/rounds.sh" <<'ROUNDS'
pi="$1"; shift
for i in $(seq 1 12); do
  s="$PWD/s$i.jsonl"
  "$pi" --provider mock --model mock-model --session "$s" "$@" -p a >/dev/null 2>&1 & a=$!
  "$pi" --provider mock --model mock-model --session "$s" "$@" -p b >/dev/null 2>&1 & b=$!
  set +e; wait $a; ca=$?; wait $b; cb=$?; set -e
  python3 -c '
import collections, json, sys
entries = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][1:]
children = collections.Counter(e.get("parentId") for e in entries)
users = sum(e.get("message", {}).get("role") == "user" for e in entries)
print(f"exit {sys.argv[2]}/{sys.argv[3]} users {users} branched {max(children.values()) > 1}")
' "$s" $ca $cb
done
ROUNDS
"$here/target/debug/pi-mock" --scenario "$work/script.json" -- bash "$work/rounds.sh" "$pi" "$@" |
  sort | uniq -c
