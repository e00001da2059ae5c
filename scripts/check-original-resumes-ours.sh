#!/usr/bin/env bash
# Has the original Pi (installed by the oracle kit beside this repository) resume a session file
# written by this harness, and checks that it continues normally.
#   scripts/check-original-resumes-ours.sh [pi command]
# Without an argument the original is installed into a temporary folder first (about 10 s).
# If it cannot be installed (no registry), the check is skipped, not failed.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
kit="$here/../shared/oracle"

if [ ! -x "$kit/install-pi.sh" ]; then
  echo "error: the conformance kit is not at $kit" >&2
  exit 2
fi

pi="${1:-}"
if [ -z "$pi" ]; then
  dir="$(mktemp -d)"
  trap 'rm -rf "$dir"' EXIT
  if ! "$kit/install-pi.sh" "$dir/pi" >"$dir/install.log" 2>&1; then
    echo "skipped: the original Pi could not be installed (see npm output below)"
    tail -5 "$dir/install.log"
    exit 0
  fi
  pi="$dir/pi/node_modules/.bin/pi"
fi

cd "$here"
PI_ORIGINAL="$pi" cargo test --locked -p pi-effects --test original_resumes_ours -- --nocapture
