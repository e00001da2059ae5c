//! The HTML report's inline stylesheet and script. Inline because the report is one file that
//! must render offline, from an artifact store or an email attachment, with no network; the
//! script only adds sorting and filtering, so the report reads the same with JavaScript off.

/// The stylesheet: system fonts only (no web fonts to fetch), a light palette.
pub(crate) const CSS: &str = r##"
:root {
  --fg: #1f2328; --muted: #656d76; --border: #d0d7de; --bg: #ffffff; --bg-soft: #f6f8fa;
  --pass: #1a7f37; --pass-bg: #dafbe1; --fail: #cf222e; --fail-bg: #ffebe9;
  --warn: #9a6700; --warn-bg: #fff8c5; --err: #8250df; --err-bg: #fbefff;
  --div: #0969da; --div-bg: #ddf4ff;
  --mono: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
/* Controls start hidden (shown by the script); `display: flex` must not override that. */
[hidden] { display: none !important; }
body {
  margin: 0; color: var(--fg); background: var(--bg);
  font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
}
main { max-width: 1200px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--border); }
h3 { font-size: 15px; margin: 20px 0 8px; }
h4 { font-size: 13px; margin: 14px 0 6px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
code, pre { font-family: var(--mono); font-size: 12px; }
a { color: var(--div); text-decoration: none; }
a:hover { text-decoration: underline; }
.meta { display: flex; flex-wrap: wrap; gap: 6px 20px; margin: 8px 0 16px; color: var(--muted); }
.meta b { color: var(--fg); font-weight: 600; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 12px; }
.card { border: 1px solid var(--border); border-radius: 8px; padding: 14px 16px; background: var(--bg-soft); }
.card-model { font-weight: 600; display: flex; align-items: center; gap: 8px; word-break: break-all; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; flex: none; vertical-align: -1px; }
.card-rate { font-size: 30px; font-weight: 600; margin: 6px 0 2px; }
.card-rate small { font-size: 13px; font-weight: 400; color: var(--muted); margin-left: 4px; }
.card dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 12px; margin: 8px 0 0; font-size: 13px; }
.card dt { color: var(--muted); }
.card dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
.chart-box { overflow-x: auto; border: 1px solid var(--border); border-radius: 8px; padding: 12px; }
svg.chart { display: block; max-width: 100%; height: auto; font-size: 12px; }
svg.chart text { fill: var(--fg); }
svg.chart .axis line { stroke: #e4e8ec; }
svg.chart .axis text { fill: var(--muted); font-size: 11px; }
svg.chart .value { font-variant-numeric: tabular-nums; }
svg.chart .value .count, svg.chart .value.none { fill: var(--muted); }
svg.chart .band { fill: #f6f8fa; }
svg.chart .ci line { stroke: var(--fg); stroke-width: 1.5; }
svg.chart .task-label { font-weight: 600; }
svg.chart .suite-label { fill: var(--muted); font-size: 11px; }
.controls { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin: 0 0 10px; }
.controls input[type=search] { padding: 4px 8px; border: 1px solid var(--border); border-radius: 6px; font: inherit; min-width: 220px; }
.controls label { color: var(--muted); cursor: pointer; }
.controls select { font: inherit; padding: 2px 6px; border: 1px solid var(--border); border-radius: 6px; margin-left: 4px; }
.check-found { margin: 2px 0 0 18px; }
.ci-text { font-size: 11px; margin-left: 4px; }
.controls button { font: inherit; padding: 3px 10px; border: 1px solid var(--border); border-radius: 6px; background: var(--bg-soft); cursor: pointer; }
.table-box { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--border); text-align: left; white-space: nowrap; }
th { background: var(--bg-soft); font-weight: 600; font-size: 13px; position: sticky; top: 0; }
th.num, td.num { text-align: right; }
td.task-name { white-space: normal; word-break: break-word; font-weight: 500; }
tbody tr:hover { background: #f3f6f9; }
.js table.sortable th { cursor: pointer; user-select: none; }
th.sorted-asc::after { content: " ▲"; font-size: 10px; }
th.sorted-desc::after { content: " ▼"; font-size: 10px; }
.k { color: var(--muted); font-size: 11px; margin-left: 3px; }
.pm { color: var(--muted); }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600; line-height: 20px; white-space: nowrap; }
.status-passed, .rate-all { color: var(--pass); background: var(--pass-bg); }
.status-failed, .rate-none { color: var(--fail); background: var(--fail-bg); }
.status-limit, .rate-some { color: var(--warn); background: var(--warn-bg); }
.status-error, .rate-na { color: var(--err); background: var(--err-bg); }
.status-diverged { color: var(--div); background: var(--div-bg); }
.group-head { display: flex; align-items: center; gap: 10px; }
.group-head .model { color: var(--muted); font-weight: 400; }
details.trial { border: 1px solid var(--border); border-radius: 8px; margin: 6px 0; background: var(--bg); }
details.trial > summary { cursor: pointer; padding: 8px 12px; display: flex; flex-wrap: wrap; align-items: center; gap: 10px; list-style: none; }
details.trial > summary::-webkit-details-marker { display: none; }
details.trial > summary::before { content: "▸"; color: var(--muted); width: 10px; }
details.trial[open] > summary::before { content: "▾"; }
details.trial[open] > summary { border-bottom: 1px solid var(--border); background: var(--bg-soft); border-radius: 8px 8px 0 0; }
.trial-title { font-weight: 600; }
.trial-why { color: var(--muted); font-size: 13px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; flex: 1 1 200px; }
.trial-stats { color: var(--muted); margin-left: auto; font-size: 13px; font-variant-numeric: tabular-nums; }
.trial-body { padding: 4px 16px 16px; }
.trial-meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 10px 0; font-size: 13px; }
.trial-meta dt { color: var(--muted); }
.trial-meta dd { margin: 0; word-break: break-word; }
.reason { color: var(--fail); }
ul.checks { list-style: none; padding: 0; margin: 0; }
li.check { padding: 4px 0; border-bottom: 1px dashed #e4e8ec; }
li.check .mark { display: inline-block; width: 18px; font-weight: 700; }
li.check.pass .mark { color: var(--pass); }
li.check.fail .mark { color: var(--fail); }
li.check .check-kind { color: var(--muted); font-size: 12px; margin-left: 6px; }
pre { margin: 4px 0; white-space: pre-wrap; word-break: break-word; }
pre.check-detail, pre.output, pre.json { background: var(--bg-soft); border: 1px solid #e4e8ec; border-radius: 6px; padding: 8px 10px; max-height: 420px; overflow: auto; }
pre.text { font-family: inherit; font-size: 14px; }
.transcript { display: flex; flex-direction: column; gap: 8px; }
.msg { border-left: 3px solid var(--border); padding: 4px 0 4px 12px; }
.msg-role { font-size: 12px; font-weight: 600; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.msg-role code, .msg-role .badge { text-transform: none; letter-spacing: 0; }
.msg-meta { text-transform: none; letter-spacing: 0; font-weight: 400; margin-left: 6px; }
.msg-user { border-left-color: #4e79a7; }
.msg-assistant { border-left-color: #59a14f; }
.msg-tool { border-left-color: #bab0ac; }
.msg-tool.is-error { border-left-color: var(--fail); }
.msg-tool.is-error pre.output { background: var(--fail-bg); border-color: #ffcecb; }
.thinking { color: var(--muted); font-style: italic; border-left: 2px dotted var(--border); padding-left: 10px; margin: 4px 0; }
.thinking pre.text { font-size: 13px; }
.label { font-size: 11px; font-weight: 600; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); font-style: normal; }
.tool-call { margin: 6px 0; }
.tool-name { font-weight: 600; color: var(--fg); }
.tool-id { color: var(--muted); font-size: 11px; font-family: var(--mono); }
.msg-error { color: var(--fail); }
.truncated { color: var(--warn); font-size: 12px; font-style: italic; }
.image { color: var(--muted); font-style: italic; }
.empty { color: var(--muted); font-style: italic; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
@media print { details.trial { break-inside: avoid; } .controls { display: none; } }
"##;

/// Sorting of tables by a header click and filtering of tasks and trials (by status, and by
/// the `data-*` attributes the `#filters` selects name). Controls start
/// `hidden` and are shown by this script, so without JavaScript no dead control is shown.
pub(crate) const SCRIPT: &str = r##"
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    if (v !== null && v !== "" && !isNaN(Number(v))) { return Number(v); }
    return (v === null ? cell.textContent : v).trim().toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("sorted-asc");
        heads.forEach(function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(asc ? "sorted-asc" : "sorted-desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]);
          var r = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1);
          return asc ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var controls = document.querySelectorAll(".controls");
  controls.forEach(function (c) { c.hidden = false; });
  var search = document.getElementById("task-search");
  var selects = document.querySelectorAll("#filters select[data-filter]");
  // Whether an element's data-* attributes pass every chosen filter; `tags` is a
  // space-separated list, which passes when it holds the chosen tag. An element without the
  // attribute is not filtered by it.
  function passes(el) {
    return Array.prototype.every.call(selects, function (s) {
      var name = s.getAttribute("data-filter");
      var have = el.getAttribute("data-" + name);
      if (s.value === "" || have === null) { return true; }
      return name === "tags" ? have.split(" ").indexOf(s.value) >= 0 : have === s.value;
    });
  }
  // The boxes of a checkbox filter (`#trial-filter`: statuses; `#verdict-filter`: the
  // comparison's verdicts) as value -> checked.
  function boxes(id) {
    var on = {};
    document.querySelectorAll("#" + id + " input[type=checkbox]").forEach(function (b) {
      on[b.value] = b.checked;
    });
    return on;
  }
  function apply() {
    var shown = boxes("trial-filter"), verdicts = boxes("verdict-filter");
    var q = search ? search.value.toLowerCase() : "";
    var hit = function (el) { return q === "" || el.textContent.toLowerCase().indexOf(q) >= 0; };
    var verdict = function (el) { return verdicts[el.getAttribute("data-verdict")] !== false; };
    document.querySelectorAll("#task-table tbody tr").forEach(function (r) {
      r.hidden = !passes(r) || !verdict(r) || !hit(r);
    });
    document.querySelectorAll("details.pair").forEach(function (d) {
      var head = d.querySelector("summary");
      d.hidden = !verdict(d) || (head !== null && !hit(head));
    });
    document.querySelectorAll("details.trial").forEach(function (d) {
      d.hidden = shown[d.getAttribute("data-status")] === false || !passes(d);
    });
    document.querySelectorAll(".trial-group").forEach(function (g) {
      g.hidden = g.querySelector("details.trial:not([hidden])") === null;
    });
  }
  if (search) { search.addEventListener("input", apply); }
  selects.forEach(function (s) { s.addEventListener("change", apply); });
  document.querySelectorAll("#trial-filter input[type=checkbox], #verdict-filter input[type=checkbox]")
    .forEach(function (b) { b.addEventListener("change", apply); });
  // The chart's k: the group of bars of the chosen k is drawn, the others not.
  document.querySelectorAll("#chart-k input[type=radio]").forEach(function (r) {
    r.addEventListener("change", function () {
      document.querySelectorAll("#chart g.k-view").forEach(function (g) {
        if (g.getAttribute("data-k") === r.value) { g.removeAttribute("display"); }
        else { g.setAttribute("display", "none"); }
      });
    });
  });
  function openAll(open) {
    document.querySelectorAll("details.trial:not([hidden])").forEach(function (d) { d.open = open; });
  }
  var expand = document.getElementById("expand-all");
  var collapse = document.getElementById("collapse-all");
  if (expand) { expand.addEventListener("click", function () { openAll(true); }); }
  if (collapse) { collapse.addEventListener("click", function () { openAll(false); }); }
})();
"##;
