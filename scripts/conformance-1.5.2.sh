#!/usr/bin/env bash
# Progress report towards Pi 1.5.2: runs the kit's public scenarios, this repository's own
# scenarios and the 1.5.2-only scenarios (conformance/scenarios-1.5.2) against our `pi` and
# prints, per scenario, whether it matches the 1.5.2 reference trace and, if not, the first
# difference (the compare.py section and its first differing lines; with --sections, the first
# difference of every section that differs).
#
#   scripts/conformance-1.5.2.sh [--sections]   (PI_BIN=<our pi> to skip the release build;
#                                            PI_ORIGINAL_152=<1.5.2's pi> to skip the install)
#
# The references are conformance/traces-1.5.2 (public scenarios),
# cli/tests/scenarios/traces-1.5.2 (ours) and conformance/scenarios-1.5.2/traces (behaviour only
# 1.5.2 has; the gate, scripts/conformance.sh, runs the same and fails on a difference). 1.5.2 itself
# (installed into a temp folder with conformance/install-pi-1.5.2.sh unless PI_ORIGINAL_152 names
# it) is run on the same scenarios too, and its column says whether it still reproduces the
# references. This is a report, not a gate: it exits 0 whenever it ran, whatever matched, and 2
# when it could not run.
set -euo pipefail
all_sections=0
case "${1:-}" in
  --sections) all_sections=1 ;;
  "") ;;
  *) echo "usage: $0 [--sections]" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")/.." && pwd)"
kit="$here/conformance"
extra="$here/cli/tests/scenarios"
only152="$kit/scenarios-1.5.2"

for need in "$kit/run.py" "$kit/compare.py" "$kit/traces-1.5.2" "$extra/traces-1.5.2" "$only152/traces"; do
  if [ ! -e "$need" ]; then
    echo "error: $need is missing" >&2
    exit 2
  fi
done

cd "$here"
ours="${PI_BIN:-}"
if [ -z "$ours" ]; then
  cargo build --release --locked -p pi-cli >/dev/null || exit 2
  ours="$here/target/release/pi"
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

original="${PI_ORIGINAL_152:-}"
if [ -z "$original" ]; then
  if bash "$kit/install-pi-1.5.2.sh" "$out/pi-152" >"$out/install.log" 2>&1; then
    original="$out/pi-152/node_modules/.bin/pi"
  else
    echo "warning: 1.5.2 could not be installed (its column shows '-'); the installer said:" >&2
    tail -5 "$out/install.log" >&2
  fi
fi

# Run both sets with ours (and with 1.5.2 when there is one); a run that could not complete its
# steps still leaves a partial trace, which the comparison reports.
python3 "$kit/run.py" --pi "$ours" --out "$out/ours" >"$out/ours.log" 2>&1 || true
python3 "$kit/run.py" --pi "$ours" --scenarios "$extra" --out "$out/ours" >>"$out/ours.log" 2>&1 || true
python3 "$kit/run.py" --pi "$ours" --scenarios "$only152" --out "$out/ours" >>"$out/ours.log" 2>&1 || true
if [ -n "$original" ]; then
  python3 "$kit/run.py" --pi "$original" --out "$out/orig" >"$out/orig.log" 2>&1 || true
  python3 "$kit/run.py" --pi "$original" --scenarios "$extra" --out "$out/orig" >>"$out/orig.log" 2>&1 || true
  python3 "$kit/run.py" --pi "$original" --scenarios "$only152" --out "$out/orig" >>"$out/orig.log" 2>&1 || true
fi

# The differences of a compare.py report: a line naming the sections that differ with the first
# difference, then one line per such section with its first removed (1.5.2's) and added (ours)
# lines.
differences() {
  { python3 "$kit/compare.py" --max-lines 100000 "$1" "$2" 2>&1 || true; } | python3 -c '
import sys
lines = sys.stdin.read().splitlines()
found = []    # [section, first removed line, first added line]
for line in lines:
    parts = line.split()
    if not line.startswith("    "):
        if len(parts) >= 2 and parts[1] == "DIFFER":
            found.append([parts[0], None, None])
        continue
    if not found or found[-1][2] is not None:
        continue
    body = line[4:]
    if body.startswith(("--- ", "+++ ", "@@")):
        continue
    if body.startswith("-") and found[-1][1] is None:
        found[-1][1] = body[1:].strip()
    elif body.startswith("+"):
        found[-1][2] = body[1:].strip()
    elif found[-1][1] is not None:
        found[-1][2] = ""
if not found:
    print(next((l.strip()[:160] for l in lines if l.strip()), "compare.py printed nothing"))
cut = lambda s: s if len(s) <= 100 else s[:97] + "..."
def first(minus, plus):
    text = ""
    if minus:
        text += " 1.5.2 " + cut(minus)
    if plus:
        text += (" / " if minus else " ") + "ours " + cut(plus)
    return text
if found:
    print(",".join(f[0] for f in found) + ":" + first(found[0][1], found[0][2]))
for section, minus, plus in found:
    print(section + ":" + first(minus, plus))'
}

matched=0
total=0
printf '%-34s %-6s %-6s %s\n' scenario 1.5.2 ours "differing sections: first difference (1.5.2 trace / ours)"
for trace in "$kit"/traces-1.5.2/*/ "$extra"/traces-1.5.2/*/ "$only152"/traces/*/; do
  name="$(basename "$trace")"
  total=$((total + 1))
  ref="-"
  if [ -n "$original" ]; then
    ref=differ
    if python3 "$kit/compare.py" -q "$trace" "$out/orig/$name"; then ref=match; fi
  fi
  if python3 "$kit/compare.py" -q "$trace" "$out/ours/$name"; then
    matched=$((matched + 1))
    printf '%-34s %-6s %-6s\n' "$name" "$ref" match
  else
    diffs="$(differences "$trace" "$out/ours/$name")"
    printf '%-34s %-6s %-6s %s\n' "$name" "$ref" differ "$(head -n 1 <<<"$diffs")"
    if [ "$all_sections" = 1 ]; then
      tail -n +2 <<<"$diffs" | sed 's/^/  /'
    fi
  fi
done
echo "ours matches 1.5.2 in $matched of $total scenarios"
