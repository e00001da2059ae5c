#!/usr/bin/env bash
# `pi eval` against the eval tools users would otherwise pick, Inspect AI and promptfoo, on the
# same 200 trivial tasks (benches/evals/trivial.toml: ask for the word "ok", check the reply
# contains it), each tool with a model that answers at once and no network:
#
#   pi eval     the suite replayed from its cassettes (one `pi replay` process per trial, in a
#               fresh workspace), --progress quiet, --jobs left at its default (the number of
#               cores), reports into a temp dir
#   inspect     `inspect eval task.py --model mockllm/model --display none --log-dir TMP`: one
#               task of 200 samples, solver generate(), scorer includes() with target "ok";
#               the task's model is mockllm/model replying "ok" with its token usage given
#               (mockllm's default reply has none, and counting its tokens needs tiktoken's
#               encoding, downloaded on first use: offline, every sample errors)
#   promptfoo   `npx promptfoo eval -c promptfooconfig.yaml --no-cache -o TMP/out.json
#               --no-table --no-progress-bar`: the `echo` provider (the reply is the prompt) and
#               200 tests each asserting `contains: ok`; telemetry, update checks and sharing
#               off, its config dir and database in a temp dir
#
# Each whole command is timed, start to exit (startup included: it is what a user waits for),
# from bash's $EPOCHREALTIME, in RUNS interleaved rounds after a warm-up round (each round runs
# the three once, so a noisy stretch on a shared machine is spread over all three). Every tool's
# result is checked once first: 200 of 200 passed. Printed: each tool's mean, standard
# deviation, min, median and max wall time, its median per trial (/ 200) and its median's ratio
# to pi eval's (the goal: pi eval at least 10x faster than both).
#
#   benches/scripts/eval-vs-inspect-promptfoo.sh [BIN_DIR] [RUNS]
#
# BIN_DIR holds `pi` (default: $CARGO_TARGET_DIR/release or target/release, built first); RUNS
# defaults to 5. Inspect AI is installed with pip into a venv and promptfoo with npm, both under
# $PI_BENCH_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/pi-bench), once: later runs reuse them.
# The versions are pinned to the ones measured in benches/evals/RESULTS.md (INSPECT_AI_VERSION
# and PROMPTFOO_VERSION override them; another version is installed over the cached one). The
# script exits 1 with a message when a tool cannot be installed or a run fails. Needs python3,
# npm/npx (Node), jq.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-}
runs=${2:-5}
inspect_version=${INSPECT_AI_VERSION:-0.3.285}
promptfoo_version=${PROMPTFOO_VERSION:-0.121.20}
cache=${PI_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-bench}
n=200
die() { echo "eval-vs-inspect-promptfoo: $*" >&2; exit 1; }
for tool in jq python3; do command -v "$tool" >/dev/null || die "$tool is needed"; done

if [ -z "$bin" ]; then
  target=${CARGO_TARGET_DIR:-$root/target}
  (cd "$root" && cargo build -q --release -p pi-cli --bins)
  bin="$target/release"
fi
pi="$(cd "$bin" && pwd)/pi"
suite="$root/benches/evals/trivial.toml"
[ -x "$pi" ] || die "no pi binary at $pi"
count=$(find "$root/benches/evals/cassettes/trivial" -name '*.jsonl' 2>/dev/null | wc -l)
[ "$count" -eq "$n" ] || die "expected $n cassettes, found $count (run benches/scripts/gen-trivial-suite.sh)"

# --- installs (cached) -------------------------------------------------------------------------
mkdir -p "$cache"
venv="$cache/inspect-venv"
inspect_has() { "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("inspect-ai"))' 2>/dev/null; }
if [ "$(inspect_has)" != "$inspect_version" ] || ! "$venv/bin/inspect" --version >/dev/null 2>&1; then
  echo "installing inspect-ai $inspect_version into $venv" >&2
  command -v python3 >/dev/null || die "cannot install Inspect AI: python3 is missing"
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" || die "cannot install Inspect AI: python3 -m venv $venv failed"
  "$venv/bin/pip" install -q "inspect-ai==$inspect_version" >&2 \
    || die "cannot install Inspect AI: pip install inspect-ai==$inspect_version failed"
  [ "$(inspect_has)" = "$inspect_version" ] && "$venv/bin/inspect" --version >/dev/null 2>&1 \
    || die "Inspect AI $inspect_version was installed but \`inspect --version\` fails"
fi
pfdir="$cache/promptfoo"
promptfoo_has() { jq -r .version "$pfdir/node_modules/promptfoo/package.json" 2>/dev/null; }
if [ "$(promptfoo_has)" != "$promptfoo_version" ]; then
  echo "installing promptfoo $promptfoo_version into $pfdir (takes minutes)" >&2
  command -v npm >/dev/null || die "cannot install promptfoo: npm is missing"
  mkdir -p "$pfdir"
  [ -f "$pfdir/package.json" ] || echo '{"name": "pi-bench-promptfoo", "private": true}' >"$pfdir/package.json"
  (cd "$pfdir" && npm install --no-audit --no-fund --loglevel=error "promptfoo@$promptfoo_version" >&2) \
    || die "cannot install promptfoo: npm install promptfoo@$promptfoo_version failed"
fi
(cd "$pfdir" && npx --no-install promptfoo --version) >/dev/null 2>&1 \
  || die "promptfoo $promptfoo_version is installed in $pfdir but \`npx promptfoo --version\` fails"
inspect_installed=$(inspect_has)
promptfoo_installed=$(promptfoo_has)

# --- the three runs ----------------------------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PI_CODING_AGENT_DIR="$work/pi-agent"
mkdir -p "$PI_CODING_AGENT_DIR"

cat >"$work/task.py" <<PY
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


def reply(input, tools, tool_choice, config):
    # mockllm counts tokens with tiktoken when a reply has no usage, which downloads its
    # encoding on first use: offline that fails every sample. The usage is given instead.
    output = ModelOutput.from_content(model="mockllm/model", content="ok")
    output.usage = ModelUsage(input_tokens=10, output_tokens=1, total_tokens=11)
    return output


@task
def trivial():
    return Task(
        dataset=[
            Sample(id=f"t{i:03d}", input=f"Reply with the word ok. ({i})", target="ok")
            for i in range($n)
        ],
        solver=generate(),
        scorer=includes(),
        model=get_model("mockllm/model", custom_outputs=reply),
    )
PY

{
  echo 'description: 200 trivial tasks (the prompt is echoed back and must contain "ok")'
  echo 'prompts: ["{{q}}"]'
  echo 'providers: [echo]'
  echo 'sharing: false'
  echo 'tests:'
  for ((i = 0; i < n; i++)); do
    echo "  - vars: {q: \"Reply with the word ok. ($i)\"}"
    echo '    assert: [{type: contains, value: ok}]'
  done
} >"$work/promptfooconfig.yaml"

cat >"$work/pi.sh" <<SH
#!/bin/sh
exec "$pi" eval "$suite" --progress quiet --out "$work/pi-out" >/dev/null
SH
cat >"$work/inspect.sh" <<SH
#!/bin/sh
cd "$work" && exec "$venv/bin/inspect" eval task.py --model mockllm/model --display none \
  --log-dir "$work/inspect-logs" >/dev/null
SH
cat >"$work/promptfoo.sh" <<SH
#!/bin/sh
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_DISABLE_SHARING=1 NODE_NO_WARNINGS=1
export PROMPTFOO_CONFIG_DIR="$work/promptfoo-home" PROMPTFOO_DISABLE_REMOTE_GENERATION=true
cd "$pfdir" && exec npx --no-install promptfoo eval -c "$work/promptfooconfig.yaml" --no-cache \
  -o "$work/promptfoo-out.json" --no-table --no-progress-bar >/dev/null
SH
chmod +x "$work"/*.sh

# Every run is checked once before timing: 200 trials, all passing.
"$work/pi.sh" || die "pi eval failed"
got=$(jq '[.trials[] | select(.status == "passed")] | length' "$work/pi-out/results.json")
[ "$got" -eq "$n" ] || die "pi eval passed $got of $n trials"
"$work/inspect.sh" || die "inspect eval failed"
got=$("$venv/bin/python" - "$work/inspect-logs" <<'PY'
import sys, glob
from inspect_ai.log import read_eval_log
log = read_eval_log(sorted(glob.glob(sys.argv[1] + "/*.eval") + glob.glob(sys.argv[1] + "/*.json"))[-1])
print(sum(1 for s in log.samples if any(v.value == "C" for v in (s.scores or {}).values())))
PY
)
[ "$got" -eq "$n" ] || die "inspect eval scored $got of $n samples correct"
"$work/promptfoo.sh" || die "promptfoo eval failed"
got=$(jq '[.results.results[] | select(.success == true)] | length' "$work/promptfoo-out.json")
[ "$got" -eq "$n" ] || die "promptfoo passed $got of $n tests"

names=(pi-eval inspect promptfoo)
cmds=("$work/pi.sh" "$work/inspect.sh" "$work/promptfoo.sh")
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

echo "$n trivial tasks, one run each, whole command timed ($(nproc) cores, $timer)"
echo "  pi eval:   pi $("$pi" --version 2>&1 | head -1), replayed, --jobs $(nproc) (default)"
echo "  inspect:   inspect-ai $inspect_installed, Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())'), mockllm/model"
echo "  promptfoo: promptfoo $promptfoo_installed, Node $(node --version), echo provider"
echo
printf '%-10s %8s %8s %8s %8s %8s %13s %11s\n' tool mean_s stdev_s min_s median_s max_s median/trial vs_pi_eval
for name in "${names[@]}"; do
  awk -v n="$name" -v m="${mean[$name]}" -v s="${sd[$name]}" -v l="${lo[$name]}" -v d="${med[$name]}" \
    -v h="${hi[$name]}" -v k="$n" -v p="${med[pi-eval]}" \
    'BEGIN { printf "%-10s %8.3f %8.3f %8.3f %8.3f %8.3f %10.2f ms %10.1fx\n", n, m, s, l, d, h, d * 1000 / k, d / p }'
done
echo
awk -v p="${med[pi-eval]}" -v i="${med[inspect]}" -v f="${med[promptfoo]}" 'BEGIN {
  printf "pi eval is %.1fx faster than inspect eval and %.1fx faster than promptfoo eval (medians; goal: >= 10x both)\n", i / p, f / p
}'
