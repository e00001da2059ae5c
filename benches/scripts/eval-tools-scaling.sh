#!/usr/bin/env bash
# How `pi eval` scales with --jobs on trials that run tools: the smoke suite's six tasks (write
# a file, read one, fix a bug and run its test, count lines with bash, a steered prompt, leave
# files alone), whose replays run every tool call for real and whose `command` checks start
# bash (each in bubblewrap when it works here). The trivial suite of eval-scaling.sh answers
# one word and runs nothing; these trials do the work a real suite's trials do, so two jobs
# should come near twice as fast as one.
#
#   benches/scripts/eval-tools-scaling.sh [BIN_DIR] [RUNS] [COPIES]
#
# BIN_DIR holds `pi` (default: $CARGO_TARGET_DIR/release or target/release, built first);
# RUNS timed rounds (default 5) after one warm-up round, interleaved (each round runs every
# command once); COPIES copies of the smoke suite, each under its own name with its own copy
# of the cassettes, so the run has 18 x COPIES trials (default 10: 180 trials). Needs jq,
# python3.
#
# What is timed (wall clock of each whole command, from bash's $EPOCHREALTIME):
#
#   tools-j1      pi eval COPIES suites --jobs 1 --progress quiet   (replayed in process)
#   tools-j2      the same with --jobs 2
#   tools-p-j1    --replay-processes --jobs 1: each trial a `pi replay` process
#   tools-p-j2    --replay-processes --jobs 2
#
# Printed: every round's time of each command (the raw rounds), then mean, standard
# deviation, min, median and max, and the speedups --jobs 1 / --jobs 2 from the medians. The
# first run's verdicts are checked before timing: every copy must score as the shipped suite
# (17 of 18 passed; one trial answers wrongly on purpose), with no error and no divergence.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-}
runs=${2:-5}
copies=${3:-10}
if [ -z "$bin" ]; then
  target=${CARGO_TARGET_DIR:-$root/target}
  (cd "$root" && cargo build -q --release -p pi-cli --bins)
  bin="$target/release"
fi
pi="$(cd "$bin" && pwd)/pi"
[ -x "$pi" ] || { echo "eval-tools-scaling: no pi binary at $pi" >&2; exit 1; }
for tool in jq python3 sed; do
  command -v "$tool" >/dev/null || { echo "eval-tools-scaling: $tool is needed" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Run as root, pi eval runs agent processes as an unprivileged user, which must get through
# to the cassettes (mktemp -d makes a folder only its owner may enter).
chmod 755 "$work"
export PI_CODING_AGENT_DIR="$work/agent"
mkdir -p "$PI_CODING_AGENT_DIR" "$work/suites" "$work/cassettes"
fixtures="$root/evals/fixtures"
suites=()
for ((c = 0; c < copies; c++)); do
  name=$(printf 'smoke%02d' "$c")
  sed -e "s|^name = \"smoke\"|name = \"$name\"|" \
      -e "s|\"\.\./fixtures/|\"$fixtures/|" \
      -e "s|^cassettes = .*|cassettes = \"$work/cassettes\"|" \
      "$root/evals/suites/smoke.toml" >"$work/suites/$name.toml"
  cp -r "$root/evals/cassettes/smoke" "$work/cassettes/$name"
  suites+=("$work/suites/$name.toml")
done
n=$((18 * copies))

eval_cmd() { echo "$pi eval ${suites[*]} --jobs $1 --progress quiet --out $work/out-$2 $3"; }
names=(tools-j1 tools-j2 tools-p-j1 tools-p-j2)
cmds=("$(eval_cmd 1 j1 '')" "$(eval_cmd 2 j2 '')" "$(eval_cmd 1 pj1 --replay-processes)"
      "$(eval_cmd 2 pj2 --replay-processes)")

# Correctness first: each copy scores as the shipped suite; nothing errors or diverges.
for i in 0 1; do
  ${cmds[$i]} >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
done
for out in j1 j2; do
  read -r passed broken < <(jq -r '[([.trials[] | select(.status == "passed")] | length),
    ([.trials[] | select(.status == "error" or .status == "diverged")] | length)] | @tsv' \
    "$work/out-$out/results.json")
  [ "$passed" -eq $((17 * copies)) ] && [ "$broken" -eq 0 ] || {
    echo "eval-tools-scaling: $out passed $passed of $n trials, $broken errored or diverged" >&2
    exit 1
  }
done
isolation=$(jq -r .isolation "$work/out-j1/results.json")

: >"$work/samples"
for ((r = 0; r <= runs; r++)); do
  for i in "${!names[@]}"; do
    t0=$EPOCHREALTIME
    ${cmds[$i]} >/dev/null 2>&1 || { echo "${names[$i]} failed" >&2; exit 1; }
    t1=$EPOCHREALTIME
    [ "$r" -eq 0 ] || echo "${names[$i]} $r $t0 $t1" >>"$work/samples"
  done
done

echo "pi eval on trials that run tools: $copies copies of the smoke suite, $n trials, replayed"
echo "(pi $("$pi" --version 2>&1 | head -1), $(nproc) cores, isolation $isolation, $runs interleaved rounds after a warm-up round)"
python3 - "$work/samples" <<'PY'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    name, r, t0, t1 = line.split()
    runs.setdefault(name, []).append(float(t1) - float(t0))
print("\nraw rounds (s):")
for name, xs in runs.items():
    print(f"  {name:<11} " + " ".join(f"{x:.3f}" for x in xs))
print(f"\n{'command':<12} {'mean_s':>8} {'stdev_s':>8} {'min_s':>8} {'median_s':>8} {'max_s':>8}")
for name, xs in runs.items():
    sd = st.stdev(xs) if len(xs) > 1 else 0.0
    print(f"{name:<12} {st.mean(xs):8.3f} {sd:8.3f} {min(xs):8.3f} {st.median(xs):8.3f} {max(xs):8.3f}")
med = {name: st.median(xs) for name, xs in runs.items()}
print("\nfrom the medians:")
print(f"  speedup in process, --jobs 1 / --jobs 2:          {med['tools-j1'] / med['tools-j2']:.2f}x")
print(f"  speedup with --replay-processes, 1 / 2:           {med['tools-p-j1'] / med['tools-p-j2']:.2f}x")
PY
