#!/usr/bin/env bash
# Checks an eval HTML report in a real headless Chromium: the page loads from file:// with no
# network, the rendered DOM holds the summary, the SVG chart, the task table and the trials, and
# a screenshot is taken for a look by eye.
#   scripts/eval-report-browser.sh REPORT.html [SCREENSHOT.png]
# The screenshot defaults to docs/images/eval-report.png. A sample report comes from the tests:
#   PI_EVAL_REPORT_OUT=/tmp/report.html cargo test -p pi-evals --test reports
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
url="file://${report// /%20}"

# The DOM after parsing and running the page's script; console messages go to the log.
if ! timeout 120 "$chromium" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom "$url" \
  >"$out/dom.html" 2>"$out/chromium.log"; then
  echo "FAIL: chromium could not render $report" >&2
  tail -20 "$out/chromium.log" >&2
  exit 1
fi

failed=0
check() { # check DESCRIPTION PATTERN [MIN_COUNT]
  local n
  n="$(grep -oE "$2" "$out/dom.html" | wc -l || true)"
  if [ "$n" -lt "${3:-1}" ]; then
    echo "FAIL: $1 (pattern '$2' found $n times, wanted at least ${3:-1})" >&2
    failed=1
  else
    echo "ok: $1 ($n)"
  fi
}
check "summary section" 'id="summary"'
check "model cards" 'class="card model-card"'
check "chart svg" '<svg id="chart"'
check "chart task groups" 'class="task-group"'
check "chart bars (none when no trial was a verdict)" 'class="bar"' 0
check "task table" 'id="task-table"'
check "task rows" '<tr><td class="task-name">'
check "trials section" 'id="trials"'
check "trial details" '<details class="trial"'
check "transcript messages" 'class="msg msg-' 0
# The inline script ran: it reveals the filter controls, which start hidden.
if grep -qE '<div class="controls" hidden' "$out/dom.html"; then
  echo "FAIL: the report's script did not run (controls still hidden)" >&2
  failed=1
else
  echo "ok: script ran"
fi
# Nothing a transcript holds may have become markup.
if grep -qE '<script>alert\(|<b>bold</b>' "$out/dom.html"; then
  echo "FAIL: user text rendered as markup" >&2
  failed=1
fi
if grep -qiE '(src|href)="https?:' "$out/dom.html"; then
  echo "FAIL: the report references the network" >&2
  failed=1
fi
if grep -qiE 'Uncaught|SyntaxError|ReferenceError|TypeError' "$out/chromium.log"; then
  echo "FAIL: script errors in the console:" >&2
  grep -iE 'Uncaught|SyntaxError|ReferenceError|TypeError' "$out/chromium.log" >&2
  failed=1
fi

# The script works: a copy of the report with a probe appended clicks the Tokens header and
# unticks the "passed" filter, and writes what it saw into the page.
cat >"$out/probe.js" <<'JS'
<script>
(function () {
  var seen = [];
  var heads = document.querySelectorAll("#task-table thead th");
  var col = -1;
  heads.forEach(function (h, i) { if (h.textContent.trim() === "Tokens") { col = i; } });
  if (col >= 0) {
    heads[col].click();
    var v = Array.prototype.map.call(document.querySelectorAll("#task-table tbody tr"),
      function (r) { return Number(r.cells[col].getAttribute("data-sort")); });
    seen.push("sort:" + (v.every(function (x, i) { return i === 0 || v[i - 1] <= x; }) ? "ok" : "bad"));
  }
  var box = document.querySelector("#trial-filter input[value=passed]");
  if (box) {
    box.checked = false;
    box.dispatchEvent(new Event("change"));
    var shown = document.querySelectorAll("details.trial[data-status=passed]:not([hidden])").length;
    seen.push("filter:" + (shown === 0 ? "ok" : "bad"));
  }
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = "probe " + seen.join(" ");
  document.body.appendChild(pre);
})();
</script>
JS
awk -v probe="$out/probe.js" '/<\/body>/ { while ((getline line < probe) > 0) print line } { print }' \
  "$report" >"$out/probe.html"
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$out/probe.html" >"$out/probe-dom.html" \
  2>/dev/null || true
probe="$(grep -oE '<pre id="probe">[^<]*' "$out/probe-dom.html" | sed 's/.*>//' || true)"
if [ -z "$probe" ]; then
  echo "FAIL: the sorting/filtering probe did not run" >&2
  failed=1
elif [[ "$probe" == *bad* ]]; then
  echo "FAIL: the report's script misbehaves: $probe" >&2
  failed=1
else
  echo "ok: script sorts and filters ($probe)"
fi

mkdir -p "$(dirname "$shot")"
rm -f "$shot"
timeout 120 "$chromium" "${flags[@]}" --hide-scrollbars --window-size=1280,1600 \
  --screenshot="$shot" "$url" >"$out/shot.log" 2>&1 || true
if [ -s "$shot" ]; then
  echo "ok: screenshot $shot"
else
  echo "FAIL: no screenshot written to $shot" >&2
  tail -20 "$out/shot.log" >&2
  failed=1
fi

if [ "$failed" -ne 0 ]; then
  echo "eval report check FAILED: $report" >&2
  exit 1
fi
echo "eval report check passed: $report"
