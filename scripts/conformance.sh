#!/usr/bin/env bash
# Runs the conformance kit's scenarios against our `pi` and compares each with the original's:
#   - the kit's public scenarios against its reference traces (made with the original 0.73.1);
#   - this repository's own scenarios (cli/tests/scenarios/*.json) against traces made by running
#     the original now, when its install directory is given.
# Exit 0 when every comparison matches, 1 otherwise.
#
#   scripts/conformance.sh [pi install dir]        (PI_BIN=<our pi> to skip the release build)
#
# `message_update` snapshots are not compared (the kit drops them: the original serialises them
# lazily; ours are exact, see the README).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
kit="$here/conformance"
original="${1:-}"

if [ ! -f "$kit/run.py" ]; then
  echo "error: the conformance kit is not at $kit" >&2
  exit 2
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

failed=0
echo "== public scenarios: ours against the reference traces"
python3 "$kit/run.py" --pi "$ours" --out "$out/ours" >"$out/run.log" 2>&1 || { cat "$out/run.log"; failed=1; }
for trace in "$kit"/traces/*/; do
  name="$(basename "$trace")"
  if python3 "$kit/compare.py" -q "$trace" "$out/ours/$name"; then
    echo "$name: match"
  else
    echo "$name: DIFFER"
    python3 "$kit/compare.py" --max-lines 60 "$trace" "$out/ours/$name" || true
    failed=1
  fi
done

extra="$here/cli/tests/scenarios"
if [ -n "$original" ] && [ -d "$extra" ] && ls "$extra"/*.json >/dev/null 2>&1; then
  echo "== this repository's scenarios: ours against the original, run now"
  pi_orig="$original/node_modules/.bin/pi"
  python3 "$kit/run.py" --pi "$pi_orig" --scenarios "$extra" --out "$out/orig-extra" >"$out/orig.log" 2>&1 || true
  python3 "$kit/run.py" --pi "$ours" --scenarios "$extra" --out "$out/ours-extra" >"$out/ours.log" 2>&1 || true
  for scenario in "$extra"/*.json; do
    name="$(basename "$scenario" .json)"
    if python3 "$kit/compare.py" -q "$out/orig-extra/$name" "$out/ours-extra/$name"; then
      echo "$name: match"
    else
      echo "$name: DIFFER"
      python3 "$kit/compare.py" --max-lines 60 "$out/orig-extra/$name" "$out/ours-extra/$name" || true
      failed=1
    fi
  done
elif [ -z "$original" ]; then
  echo "(no install dir of the original given: this repository's own scenarios were not compared)"
fi

exit "$failed"
