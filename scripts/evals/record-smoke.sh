#!/usr/bin/env bash
# Records the smoke suite's cassettes (evals/cassettes/smoke/) from the scripted model: each
# task's replies are in evals/scenarios/smoke/<task>.json, one trial after the other, served by
# pi-mock while `pi eval --record` runs that task's trials one at a time.
#
#   scripts/evals/record-smoke.sh [TARGET_DIR]   (default: target/debug, built first)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-}
if [ -z "$bin" ]; then
  (cd "$root" && cargo build -q -p pi-cli -p pi-testkit --bins)
  bin="$root/target/debug"
fi
suite="$root/evals/suites/smoke.toml"
out="$root/evals/cassettes"
rm -rf "$out/smoke"
for scenario in "$root"/evals/scenarios/smoke/*.json; do
  task=$(basename "$scenario" .json)
  echo "recording $task" >&2
  # pi-mock clears PI_* variables; PI_PACKAGE_DIR is given again inside it. The system prompt
  # names where Pi's documentation is (beside the binary by default): a fixed place keeps the
  # recording machine's paths out of the cassettes.
  "$bin/pi-mock" --scenario "$scenario" -- env PI_PACKAGE_DIR=/usr/lib/pi \
    "$bin/pi" eval "$suite" --filter "$task" --record "$out" --jobs 1 --progress plain \
    --out "$(mktemp -d)"
done
echo "recorded into $out/smoke" >&2
