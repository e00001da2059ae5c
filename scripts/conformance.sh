#!/usr/bin/env bash
# The conformance gate against Pi 1.5.2: runs our `pi` on every scenario that has a 1.5.2
# reference trace and compares each run with its trace:
#   - the kit's public scenarios (conformance/scenarios) against conformance/traces-1.5.2;
#   - this repository's own scenarios (cli/tests/scenarios/*.json) against
#     cli/tests/scenarios/traces-1.5.2;
#   - the scenarios of behaviour only 1.5.2 has (conformance/scenarios-1.5.2/*.json) against
#     conformance/scenarios-1.5.2/traces.
# Given the original's install dir (conformance/install-pi-1.5.2.sh makes one), the original is
# run on the same scenarios too, and each reference must still be what it does: a trace it no
# longer reproduces fails the gate as stale. Each run of ours is recorded (so recording changes
# nothing a trace shows), and every cassette must then be reproduced by `pi replay --check` with
# no Node on PATH. Exit 0 when everything matches, 1 otherwise, 2 when the kit or a reference set
# is missing.
#
#   scripts/conformance.sh [pi 1.5.2 install dir]   (PI_BIN=<our pi> to skip the release build)
#
# scripts/conformance-1.5.2.sh prints the same comparisons as a table, one line per scenario.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
kit="$here/conformance"
extra="$here/cli/tests/scenarios"
only152="$kit/scenarios-1.5.2"
install="${1:-}"

for need in "$kit/run.py" "$kit/compare.py" "$kit/traces-1.5.2" "$extra/traces-1.5.2" "$only152/traces"; do
  if [ ! -e "$need" ]; then
    echo "error: $need is missing" >&2
    exit 2
  fi
done
original=""
if [ -n "$install" ]; then
  original="$install/node_modules/.bin/pi"
  if [ ! -x "$original" ]; then
    echo "error: $original is not the original's pi (is $install a Pi 1.5.2 install dir?)" >&2
    exit 2
  fi
fi

cd "$here"
# PI_BIN names an already built binary (CI reuses the test build); else a release build.
ours="${PI_BIN:-}"
if [ -z "$ours" ]; then
  cargo build --release --locked -p pi-cli >/dev/null
  ours="$here/target/release/pi"
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Ours runs through a wrapper that records each run into its own cassette.
cassettes="$out/cassettes"
mkdir -p "$cassettes" "$out/no-node"
recording="$out/pi-recording"
printf '#!/bin/sh\nexec "%s" --record "$(mktemp -u "%s/run-XXXXXXXXXX.jsonl")" "$@"\n' "$ours" "$cassettes" >"$recording"
chmod +x "$recording"

# One set of scenarios: the scenarios folder (empty for the kit's own) and its references.
sets=("|$kit/traces-1.5.2" "$extra|$extra/traces-1.5.2" "$only152|$only152/traces")
failed=0
for set in "${sets[@]}"; do
  scenarios="${set%%|*}"
  references="${set#*|}"
  args=()
  [ -n "$scenarios" ] && args=(--scenarios "$scenarios")
  label="${scenarios#"$here"/}"
  [ -n "$label" ] || label="the kit's public scenarios"
  echo "== $label: ours against ${references#"$here"/}"
  # Most of a run's time is waiting (Node starting, the mock, an RPC step's delay): ours and
  # the original run side by side, several scenarios at once.
  python3 "$kit/run.py" --pi "$recording" --jobs 3 "${args[@]}" --out "$out/ours" >>"$out/ours.log" 2>&1 &
  ours_run=$!
  if [ -n "$original" ]; then
    python3 "$kit/run.py" --pi "$original" --jobs 3 "${args[@]}" --out "$out/orig" >>"$out/orig.log" 2>&1 || true
  fi
  wait "$ours_run" || true
  for trace in "$references"/*/; do
    name="$(basename "$trace")"
    if [ -n "$original" ] && ! python3 "$kit/compare.py" -q "$trace" "$out/orig/$name"; then
      echo "$name: STALE (the original no longer reproduces its reference)"
      python3 "$kit/compare.py" --max-lines 60 "$trace" "$out/orig/$name" || true
      failed=1
    fi
    if python3 "$kit/compare.py" -q "$trace" "$out/ours/$name"; then
      echo "$name: match"
    else
      echo "$name: DIFFER"
      python3 "$kit/compare.py" --max-lines 60 "$trace" "$out/ours/$name" || true
      failed=1
    fi
  done
done
echo "== every run of ours, replayed from its cassette alone"
if ! PATH="$out/no-node" HOME="$out" "$ours" replay --check "$cassettes" >"$out/check.log" 2>&1; then
  grep -v '^ok ' "$out/check.log" | head -80
  failed=1
fi
tail -1 "$out/check.log"
[ -n "$original" ] || echo "(no install dir of the original given: the references were not rechecked against it)"
exit "$failed"
