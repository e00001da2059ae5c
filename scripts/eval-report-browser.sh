#!/usr/bin/env bash
# Checks eval HTML reports in a real headless Chromium, from file:// with no network:
#  1. REPORT.html (the smoke suite's, in CI): the rendered DOM holds the summary, the chart
#     with its error bars (pass@1 drawn, pass@k for larger k switched to by the page's
#     script), the task table, the filters and the trials with their transcripts;
#     the page's script sorts and filters; a screenshot is taken for a look by eye.
#  2. A report this script makes from a hostile suite (scripts/evals/hostile/): this build's
#     pi runs it against a scripted model (pi-mock) that answers with script tags, event
#     handlers, javascript: links, an early </textarea> and </pre>, a stylesheet and bidi
#     overrides, in its final text, its tool calls' arguments and results and what its checks
#     found; recorded, then replayed. In the report none of it may run (a global the payload
#     sets stays undefined) or become markup, the filters still work, and each trial links
#     to its cassette.
#  3. `pi eval compare --html` of those two runs: the same, side by side, and its filters by
#     verdict and by task.
#
#   scripts/eval-report-browser.sh REPORT.html [SCREENSHOT.png]
# The screenshot defaults to docs/images/eval-report.png. PI_BIN_DIR names the folder of this
# build's pi and pi-mock (default target/debug, built first). A sample report also comes from
# the tests: PI_EVAL_REPORT_OUT=/tmp/report.html cargo test -p pi-evals --test reports
# Exit status: 0 all checks passed, 1 a check failed, 2 bad usage or no Chromium.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"

usage() { echo "usage: $0 REPORT.html [SCREENSHOT.png]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
report="$1"
shot="${2:-$here/docs/images/eval-report.png}"
[ -f "$report" ] || { echo "no such report: $report" >&2; exit 2; }
report="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"

chromium=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then chromium="$(command -v "$c")"; break; fi
done
if [ -z "$chromium" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium (apt-get install -y chromium)..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
    chromium="$(command -v chromium || true)"
  fi
  if [ -z "$chromium" ]; then
    echo "Chromium is needed: install Debian's 'chromium' package (apt-get install chromium)" >&2
    exit 2
  fi
fi

profile="$(mktemp -d)"
out="$(mktemp -d)"
trap 'rm -rf "$profile" "$out"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile")
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

# dump PAGE NAME: the DOM after parsing and running the page's script into $out/NAME.dom;
# console messages go to $out/NAME.log.
dump() {
  if ! timeout 120 "$chromium" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom \
    "file://${1// /%20}" >"$out/$2.dom" 2>"$out/$2.log"; then
    fail "chromium could not render $1"
    tail -20 "$out/$2.log" >&2
    return 1
  fi
  if grep -qiE 'Uncaught|SyntaxError|ReferenceError|TypeError' "$out/$2.log"; then
    fail "$2: script errors in the console:"
    grep -iE 'Uncaught|SyntaxError|ReferenceError|TypeError' "$out/$2.log" >&2
  fi
  if grep -qiE '(src|href)="(https?:|//)' "$out/$2.dom"; then
    fail "$2: the page references the network"
  fi
}

# check NAME DESCRIPTION PATTERN [MIN_COUNT]: PATTERN (grep -E) occurs at least MIN_COUNT
# (default 1) times in NAME's DOM.
check() {
  local n
  n="$(grep -oE "$3" "$out/$1.dom" | wc -l || true)"
  if [ "$n" -lt "${4:-1}" ]; then
    fail "$1: $2 (pattern '$3' found $n times, wanted at least ${4:-1})"
  else
    echo "ok: $1: $2 ($n)"
  fi
}

# absent NAME DESCRIPTION PATTERN: PATTERN (grep -E) is nowhere in NAME's DOM. (In the DOM
# Chromium writes out, a `<` of a text is `&lt;`: a literal tag is an element.)
absent() {
  if grep -qE "$3" "$out/$1.dom"; then
    fail "$1: $2 (found: $(grep -oE "$3" "$out/$1.dom" | head -1))"
  else
    echo "ok: $1: $2"
  fi
}

# The probe: appended to a copy of a page, it sorts a column, filters trials by status and by
# task, looks for the hostile payload's global and at the body's style, and writes what it
# saw into the page as `key:ok` or `key:bad` words.
cat >"$out/probe.js" <<'JS'
<script>
(function () {
  var seen = [];
  function shown(selector) {
    return Array.prototype.filter.call(document.querySelectorAll(selector),
      function (e) { return e.closest("[hidden]") === null; });
  }
  var heads = document.querySelectorAll("#task-table thead th");
  var col = -1;
  heads.forEach(function (h, i) { if (h.textContent.trim() === SORT_BY) { col = i; } });
  if (col >= 0) {
    heads[col].click();
    var v = Array.prototype.map.call(document.querySelectorAll("#task-table tbody tr"),
      function (r) { return Number(r.cells[col].getAttribute("data-sort")); });
    seen.push("sort:" + (v.length > 0 && v.every(function (x, i) { return i === 0 || v[i - 1] <= x; }) ? "ok" : "bad"));
  }
  var box = document.querySelector("#trial-filter input[value=passed]");
  if (box) {
    var before = shown("details.trial[data-status=passed]").length;
    box.checked = false;
    box.dispatchEvent(new Event("change"));
    var after = shown("details.trial[data-status=passed]").length;
    seen.push("status:" + (before > 0 && after === 0 && shown("details.trial").length > 0 ? "ok" : "bad"));
    box.checked = true;
    box.dispatchEvent(new Event("change"));
  }
  var select = document.querySelector("#filters select[data-filter=task]");
  if (select) {
    var want = select.options[select.options.length - 1].value;
    select.value = want;
    select.dispatchEvent(new Event("change"));
    var trials = shown("details.trial"), rows = shown("#task-table tbody tr");
    var only = function (e) { return e.getAttribute("data-task") === want; };
    var hidden = document.querySelectorAll("details.trial").length - trials.length;
    seen.push("task:" + (want !== "" && trials.length > 0 && rows.length > 0 && hidden > 0 &&
      trials.every(only) && rows.every(only) ? "ok" : "bad"));
    select.value = "";
    select.dispatchEvent(new Event("change"));
  }
  // The chart's k: choosing the largest draws its bars (with error bars) and no other k's.
  var radios = document.querySelectorAll("#chart-k input[type=radio]");
  if (radios.length > 1) {
    var last = radios[radios.length - 1];
    last.checked = true;
    last.dispatchEvent(new Event("change"));
    var drawn = Array.prototype.filter.call(document.querySelectorAll("#chart g.k-view"),
      function (g) { return g.getAttribute("display") !== "none"; });
    seen.push("chartk:" + (drawn.length > 0 && drawn.every(function (g) {
      return g.getAttribute("data-k") === last.value;
    }) && drawn.some(function (g) { return g.querySelector("g.ci") !== null; }) ? "ok" : "bad"));
    radios[0].checked = true;
    radios[0].dispatchEvent(new Event("change"));
  }
  // The comparison page: hiding a verdict hides its rows and pairs, and only those; the
  // search keeps one task's rows and pairs.
  var vbox = document.querySelector("#verdict-filter input[type=checkbox]");
  if (vbox) {
    var of = function (v) {
      return shown('#task-table tbody tr[data-verdict="' + v + '"]').length +
        shown('details.pair[data-verdict="' + v + '"]').length;
    };
    var all = function () { return shown("#task-table tbody tr").length + shown("details.pair").length; };
    var v0 = of(vbox.value), total = all();
    vbox.checked = false;
    vbox.dispatchEvent(new Event("change"));
    var gone = of(vbox.value), left = all();
    vbox.checked = true;
    vbox.dispatchEvent(new Event("change"));
    seen.push("verdict:" + (v0 >= 2 && gone === 0 && left === total - v0 && all() === total ? "ok" : "bad"));
  }
  var find = document.getElementById("task-search");
  var pair = document.querySelector("details.pair[data-task]");
  if (find && pair) {
    var name = pair.getAttribute("data-task");
    find.value = name;
    find.dispatchEvent(new Event("input"));
    var has = function (e) { return e.getAttribute("data-task") === name; };
    var pairs = shown("details.pair"), trs = shown("#task-table tbody tr");
    var out = document.querySelectorAll("details.pair").length - pairs.length;
    seen.push("search:" + (pairs.length > 0 && trs.length > 0 && out > 0 && pairs.every(has) &&
      trs.every(has) ? "ok" : "bad"));
    find.value = "";
    find.dispatchEvent(new Event("input"));
  }
  seen.push("inert:" + (typeof window.__piHostile === "undefined" ? "ok" : "bad(" + window.__piHostile + ")"));
  seen.push("style:" + (getComputedStyle(document.body).display !== "none" ? "ok" : "bad"));
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = "probe " + seen.join(" ");
  document.body.appendChild(pre);
})();
</script>
JS

# probe PAGE NAME SORT_COLUMN KEY...: runs the probe on a copy of PAGE; each KEY must be ok.
probe() {
  local page="$1" name="$2" sort="$3" seen key
  shift 3
  awk -v probe="$out/probe.js" -v sort="$sort" '
    /<\/body>/ { print "<script>var SORT_BY = \"" sort "\";</script>"
                 while ((getline line < probe) > 0) print line }
    { print }' "$page" >"$out/$name-probe.html"
  timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$out/$name-probe.html" \
    >"$out/$name-probe.dom" 2>/dev/null || true
  seen="$(grep -oE '<pre id="probe">[^<]*' "$out/$name-probe.dom" | sed 's/.*>//' || true)"
  if [ -z "$seen" ]; then
    fail "$name: the probe did not run"
    return
  fi
  for key in "$@"; do
    [[ " $seen " == *" $key:ok "* ]] || fail "$name: the page's script misbehaves: $key ($seen)"
  done
  echo "ok: $name: $seen"
}

# links NAME PAGE MIN: at least MIN cassette links, each a relative path to a file.
links() {
  local n=0 href dir
  dir="$(dirname "$2")"
  while IFS= read -r href; do
    n=$((n + 1))
    case "$href" in
      /* | *:*) fail "$1: a cassette link is not a relative path: $href" ;;
    esac
    [ -f "$dir/$(printf '%b' "${href//%/\\x}")" ] || fail "$1: a cassette link leads nowhere: $href"
  done < <(grep -oE '<a class="cassette" href="[^"]*"' "$2" | sed 's/.*href="//; s/"$//')
  if [ "$n" -lt "$3" ]; then
    fail "$1: $n cassette links, wanted at least $3"
  else
    echo "ok: $1: $n cassette links lead to their files"
  fi
}

# 1. The report given.
dump "$report" report || true
check report "summary section" 'id="summary"'
check report "model cards" 'class="card model-card"'
check report "chart svg" '<svg id="chart"'
check report "chart task groups" 'class="task-group"'
check report "chart bars" 'class="bar"'
check report "chart error bars" '<g class="ci">'
check report "pass@k views for k above 1, not drawn" '<g class="k-view" data-k="[2-9][0-9]*" display="none"' 1
check report "a k switch" '<input type="radio" name="chart-k" value="[0-9]+"' 2
check report "task table" 'id="task-table"'
check report "task rows" '<tr data-suite="[^"]*" data-task='
check report "filters" 'id="filters"'
check report "trials section" 'id="trials"'
check report "trial details" '<details class="trial"'
check report "transcript messages" 'class="msg msg-'
check report "tool calls" 'class="tool-call"'
check report "what failed checks found" 'class="check-found"'
# The inline script ran: it reveals the filter controls, which start hidden.
absent report "the script ran (controls shown)" '<div class="controls[^"]*" hidden'
# Nothing a transcript holds may have become markup (the test sample's hostile text).
absent report "user text stays text" '<script>alert\(|<b>bold</b>'
probe "$report" report Tokens sort status task chartk inert style

mkdir -p "$(dirname "$shot")"
rm -f "$shot"
timeout 120 "$chromium" "${flags[@]}" --hide-scrollbars --window-size=1280,1600 \
  --screenshot="$shot" "file://${report// /%20}" >"$out/shot.log" 2>&1 || true
if [ -s "$shot" ]; then
  echo "ok: screenshot $shot"
else
  fail "no screenshot written to $shot"
  tail -20 "$out/shot.log" >&2
fi

# 2. The hostile suite, run by this build against the scripted model, recorded and replayed.
bin="${PI_BIN_DIR:-}"
if [ -z "$bin" ]; then
  (cd "$here" && cargo build -q --locked -p pi-cli -p pi-testkit --bins)
  bin="$here/target/debug"
fi
hostile="$here/scripts/evals/hostile"
run="$out/hostile"
mkdir -p "$run"
# pi-mock runs the command in a scratch folder: every path is absolute. Its commands run
# unconfined (--isolate none): they are the scripted model's, which only write and cat a file.
if ! "$bin/pi-mock" --scenario "$hostile/hostile.json" -- env PI_PACKAGE_DIR=/usr/lib/pi \
  "$bin/pi" eval "$hostile/hostile.toml" --isolate none --record "$run/cassettes" --jobs 1 \
  --progress quiet --out "$run/recorded" >"$run/record.log" 2>&1; then
  fail "the hostile suite did not run:"
  tail -20 "$run/record.log" >&2
fi
(cd "$run" && "$bin/pi" eval "$hostile/hostile.toml" --isolate none --replay cassettes \
  --progress quiet --out replayed >"$run/replay.log" 2>&1) ||
  { fail "the hostile suite's replay failed:"; tail -20 "$run/replay.log" >&2; }
"$bin/pi" eval compare "$run/recorded/results.json" "$run/replayed/results.json" \
  --html "$run/compare.html" >"$run/compare.log" 2>&1 ||
  { fail "pi eval compare --html failed:"; tail -20 "$run/compare.log" >&2; }

bidi="$(printf '\xe2\x80\xae')"
for name in recorded replayed; do
  page="$run/$name/report.html"
  [ -f "$page" ] || { fail "no $name report"; continue; }
  dump "$page" "hostile-$name" || continue
  check "hostile-$name" "the payload is shown, as text" '__piHostile' 4
  check "hostile-$name" "passed and failed trials" 'data-status="(passed|failed)"' 4
  check "hostile-$name" "chart error bars" '<g class="ci">' 2
  check "hostile-$name" "tool calls with their arguments" 'class="tool-call"' 4
  check "hostile-$name" "tool results" 'class="msg msg-tool' 4
  check "hostile-$name" "what failed checks found" 'class="check-found"' 6
  check "hostile-$name" "a task filter" 'data-filter="task"'
  check "hostile-$name" "bidi overrides shown as code points" 'U\+202E' 4
  absent "hostile-$name" "no markup from the payload" \
    '<(script|img|svg|style)[ >][^<]*(__piHostile|display:none)|<a [^>]*href="javascript:|</textarea>'
  if grep -qF "$bidi" "$out/hostile-$name.dom"; then
    fail "hostile-$name: a bidi override reached the page"
  fi
  probe "$page" "hostile-$name" Tokens sort status task inert style
  links "hostile-$name" "$page" 4
done

if [ -f "$run/compare.html" ]; then
  dump "$run/compare.html" compare || true
  check compare "a pair per task" '<details class="pair"' 2
  check compare "both sides" 'class="side side-b"' 2
  check compare "the payload is shown, as text" '__piHostile' 4
  absent compare "no markup from the payload" \
    '<(script|img|svg|style)[ >][^<]*(__piHostile|display:none)|<a [^>]*href="javascript:|</textarea>'
  check compare "rows and pairs carry their verdict and task" \
    '(<tr|<details class="pair") [^>]*data-verdict="[a-z_]+" data-suite="[^"]+" data-task="[^"]+"' 4
  check compare "a verdict filter with a count" \
    '<label><input type="checkbox" value="[a-z_]+" checked(="")?> <span class="badge verdict-[a-z_]+">[a-z ]+</span> [1-9]' 1
  probe "$run/compare.html" compare Delta sort verdict search inert style
fi

if [ "$failed" -ne 0 ]; then
  echo "eval report check FAILED: $report" >&2
  exit 1
fi
echo "eval report check passed: $report and the hostile suite's reports"
