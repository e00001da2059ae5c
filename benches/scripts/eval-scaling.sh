#!/usr/bin/env bash
# How `pi eval` scales with --jobs, and what it costs per trial on top of the agent processes
# it runs, on the 200 trivial tasks of benches/evals/trivial.toml (replayed from their
# cassettes; benches/scripts/gen-trivial-suite.sh makes both).
#
#   benches/scripts/eval-scaling.sh [BIN_DIR] [RUNS]
#
# BIN_DIR holds `pi` (default: $CARGO_TARGET_DIR/release or target/release, built first);
# RUNS timed rounds (default 10) after one warm-up round; each round runs every command once,
# so that a noisy stretch on a shared machine is spread over all of them. Needs jq, python3.
#
# What is timed (wall clock of each whole command, start to exit, from bash's $EPOCHREALTIME):
#
#   eval-j1     pi eval trivial.toml --jobs 1 --progress quiet --out TMP   (replaying)
#   eval-j2     the same with --jobs 2
#   replay-j1   a bash loop running the same 200 cassettes as plain processes, one after the
#               other: `pi replay CASSETTE --tools in-place --workspace WS/tNNN`, stdout to
#               /dev/null, the 200 workspaces made by one `mkdir -p` at the start of the loop
#   eval-j1-shm eval-j1 with TMPDIR=/dev/shm (a tmpfs), where the trials' folders are made and
#               removed: how much of the overhead is the file system (left out without /dev/shm)
#   replay-j2   the same 200 replays two at a time (`xargs -P 2 -n 6 pi`, no shell per
#               replay): the ceiling for eval-j2
#
# and what is printed: every round's time of each command (the raw rounds), each command's
# mean, standard deviation, min, median and max, and, from
# the medians (a few runs hit by another tenant's burst move the means a lot):
#
#   speedup     eval-j1 / eval-j2 (the goal: at least 1.8 on 2 cores)
#   overhead    (eval-j1 - replay-j1) / 200: what the harness adds to each trial beyond running
#               its agent process: loading and planning the suite, the trial's folders (temp
#               dir, workspace, home, agent dir, settings.json, the shell wrapper), spawning and
#               watching the process, reading its JSON events from a pipe, the checks, and the
#               results and reports written at the end (the goal: under 5 ms)
#   in/out      from the last eval-j1 run's results.json: the sum of the trials' wallMs (each
#               agent process, spawn to exit, as the runner measured it; whole milliseconds,
#               rounded down) and the rest of the wall time, which is the harness's alone
#
# EVAL_ARGS is added to every pi eval command: `EVAL_ARGS=--replay-processes` measures the
# mode where each trial is a `pi replay` process, which the overhead above is defined for; by
# default pi eval replays trials in its own process, faster than the plain replay loop (the
# "overhead" is then negative: the eval is cheaper than starting the agent processes).
#
# These trials are trivial and warm: each answers one word from its cassette and runs no tool,
# and the same binary, suite and cassettes run every round (the page cache holds them after the
# warm-up round), so the figures are the harness's own costs, not a real suite's.
# benches/scripts/eval-tools-scaling.sh measures trials that run tools.
#
# Both eval runs must pass all 200 trials (the script checks results.json once before timing).
# The machine should be otherwise idle; numbers from a noisy machine vary by several percent.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-}
runs=${2:-10}
if [ -z "$bin" ]; then
  target=${CARGO_TARGET_DIR:-$root/target}
  (cd "$root" && cargo build -q --release -p pi-cli --bins)
  bin="$target/release"
fi
pi="$(cd "$bin" && pwd)/pi"
suite="$root/benches/evals/trivial.toml"
cassettes="$root/benches/evals/cassettes/trivial"
n=200
[ -x "$pi" ] || { echo "eval-scaling: no pi binary at $pi" >&2; exit 1; }
for tool in jq python3 xargs; do
  command -v "$tool" >/dev/null || { echo "eval-scaling: $tool is needed" >&2; exit 1; }
done
count=$(find "$cassettes" -name '*.jsonl' 2>/dev/null | wc -l)
[ "$count" -eq "$n" ] || {
  echo "eval-scaling: expected $n cassettes under $cassettes, found $count (run benches/scripts/gen-trivial-suite.sh)" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# No user settings, models or credentials leak into the runs.
export PI_CODING_AGENT_DIR="$work/agent"
mkdir -p "$PI_CODING_AGENT_DIR"
echo '{"retry": {"enabled": false}}' >"$PI_CODING_AGENT_DIR/settings.json"

# The plain-process baseline: the same 200 replays, sequential and two at a time.
(cd "$cassettes" && find . -name '*.jsonl' | sort | sed 's|^\./||') >"$work/list"
cat >"$work/replay-j1.sh" <<SH
#!/usr/bin/env bash
set -e
rm -rf "$work/ws"; mkdir -p "$work"/ws/t{000..199}
while read -r c; do
  t=\${c%%/*}
  "$pi" replay "$cassettes/\$c" --tools in-place --workspace "$work/ws/\$t" >/dev/null
done <"$work/list"
SH
# Each line: the words after `pi` for one replay, so xargs adds no process of its own per trial.
while read -r c; do
  echo "replay $cassettes/$c --tools in-place --workspace $work/ws/${c%%/*}"
done <"$work/list" >"$work/args"
cat >"$work/replay-j2.sh" <<SH
#!/usr/bin/env bash
set -e
rm -rf "$work/ws"; mkdir -p "$work"/ws/t{000..199}
xargs -P 2 -n 6 "$pi" <"$work/args" >/dev/null
SH
chmod +x "$work"/replay-j*.sh

eval_cmd() { echo "$pi eval $suite --jobs $1 --progress quiet --out $work/out-j$1 ${EVAL_ARGS:-}"; }

# Correctness first: every trial passes in both, and the baseline replays all succeed.
for j in 1 2; do
  $(eval_cmd "$j") >/dev/null
  passed=$(jq '[.trials[] | select(.status == "passed")] | length' "$work/out-j$j/results.json")
  [ "$passed" -eq "$n" ] || { echo "eval-scaling: --jobs $j passed $passed of $n trials" >&2; exit 1; }
done
"$work/replay-j1.sh"
"$work/replay-j2.sh"

names=(eval-j1 eval-j2 replay-j1 replay-j2)
cmds=("$(eval_cmd 1)" "$(eval_cmd 2)" "$work/replay-j1.sh" "$work/replay-j2.sh")
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  names+=(eval-j1-shm)
  cmds+=("env TMPDIR=/dev/shm $pi eval $suite --jobs 1 --progress quiet --out $work/out-shm ${EVAL_ARGS:-}")
fi
# Times the commands in interleaved rounds (round 0 a warm-up, not counted), so that a noisy
# minute on a shared machine is spread over all of them rather than landing on one; wall clock
# from bash's $EPOCHREALTIME (no process of its own). Fills mean, sd, lo, med, hi (seconds).
declare -A mean sd lo med hi
time_rounds() {
  local r i t0 t1
  : >"$work/samples"
  for ((r = 0; r <= runs; r++)); do
    for i in "${!names[@]}"; do
      t0=$EPOCHREALTIME
      ${cmds[$i]} >/dev/null || { echo "${names[$i]} failed" >&2; return 1; }
      t1=$EPOCHREALTIME
      [ "$r" -eq 0 ] || echo "${names[$i]} $t0 $t1" >>"$work/samples"
    done
  done
  while read -r name m s l md h; do
    mean[$name]=$m; sd[$name]=$s; lo[$name]=$l; med[$name]=$md; hi[$name]=$h
  done < <(python3 - "$work/samples" <<'PY'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    name, t0, t1 = line.split()
    runs.setdefault(name, []).append(float(t1) - float(t0))
for name, xs in runs.items():
    sd = st.stdev(xs) if len(xs) > 1 else 0.0
    print(name, st.mean(xs), sd, min(xs), st.median(xs), max(xs))
PY
)
}
time_rounds
timer="$runs interleaved rounds after a warm-up round"

inside=$(jq '[.trials[].wallMs] | add' "$work/out-j1/results.json")
echo "pi eval scaling: $n trivial trials, replayed (pi $("$pi" --version 2>&1 | head -1), $(nproc) cores, $timer)"
echo
echo "raw rounds (s):"
python3 - "$work/samples" <<'PY'
import sys
runs = {}
for line in open(sys.argv[1]):
    name, t0, t1 = line.split()
    runs.setdefault(name, []).append(float(t1) - float(t0))
for name, xs in runs.items():
    print(f"  {name:<11} " + " ".join(f"{x:.3f}" for x in xs))
PY
echo
printf '%-12s %8s %8s %8s %8s %8s %13s\n' command mean_s stdev_s min_s median_s max_s median/trial
for name in "${names[@]}"; do
  awk -v n="$name" -v m="${mean[$name]}" -v s="${sd[$name]}" -v l="${lo[$name]}" -v d="${med[$name]}" \
    -v h="${hi[$name]}" -v k="$n" \
    'BEGIN { printf "%-12s %8.3f %8.3f %8.3f %8.3f %8.3f %10.2f ms\n", n, m, s, l, d, h, d * 1000 / k }'
done
echo
echo "from the medians:"
awk -v e1="${med[eval-j1]}" -v e2="${med[eval-j2]}" -v r1="${med[replay-j1]}" -v r2="${med[replay-j2]}" \
    -v k="$n" -v inside="$inside" -v shm="${med[eval-j1-shm]:-}" 'BEGIN {
  printf "  speedup, eval --jobs 1 / --jobs 2:        %.2fx  (goal >= 1.8x)\n", e1 / e2
  printf "  speedup, plain replays 1 / 2 at a time:   %.2fx\n", r1 / r2
  printf "  harness overhead per trial, --jobs 1:     %.2f ms  ((eval-j1 - replay-j1) / %d; goal < 5 ms)\n", (e1 - r1) * 1000 / k, k
  printf "  harness overhead per trial, --jobs 2:     %.2f ms  ((eval-j2 - replay-j2) / %d)\n", (e2 - r2) * 1000 / k, k
  if (shm != "") printf "  trial folders on tmpfs saves, --jobs 1:  %.2f ms per trial ((eval-j1 - eval-j1-shm) / %d)\n", (e1 - shm) * 1000 / k, k
  printf "  last eval-j1 run: its agent processes took %.0f ms in all (sum of wallMs), %.2f ms per trial;\n", inside, inside / k
  printf "    the rest of the median wall time, the harness alone, is %.2f ms per trial\n", (e1 * 1000 - inside) / k
}'
