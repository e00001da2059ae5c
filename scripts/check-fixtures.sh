#!/usr/bin/env bash
# Regenerates the fixtures made from the original's pure functions and fails when any differs from
# the checked-in file, so a fixture cannot drift from what the original computes.
#   scripts/check-fixtures.sh <pi install dir>
# The install dir is the one conformance/install-pi-1.5.2.sh creates; the generators run with the
# Node it installed beside the original (node/bin/node), else with the node on PATH.
# Fixtures whose generators depend on the clock, the machine or installed tools (the system
# prompt's date, bash timings, rg/fd versions, files on disk) are not rechecked here.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
original="${1:?usage: check-fixtures.sh <pi install dir>}"
node="$original/node/bin/node"
[ -x "$node" ] || node=node
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

pairs=(
  "gen-anthropic-body-fixtures.mjs providers/tests/fixtures/anthropic-bodies.json"
  "gen-anthropic-thread-fixtures.mjs providers/tests/fixtures/anthropic-threads.json"
  "gen-cost-fixtures.mjs providers/tests/fixtures/cost.json"
  "gen-custom-tool-fixtures.mjs core/tests/fixtures/custom_tool_cases.json"
  "gen-default-models.mjs providers/src/catalog/default_models.json"
  "gen-diff-fixtures.mjs core/tests/fixtures/diff_cases.json"
  "gen-edit-fixtures.mjs core/tests/fixtures/edit_cases.json"
  "gen-mcp-fixtures.mjs mcp/tests/fixtures/convert_152.json"
  "gen-mcp-section-fixtures.mjs mcp/tests/fixtures/servers_section_152.json"
  "gen-model-catalog.mjs providers/src/catalog/models.json"
  "gen-output-fixtures.mjs core/tests/fixtures/output_cases.json"
  "gen-overflow-fixtures.mjs core/tests/fixtures/overflow_cases.json"
  "gen-partial-json-fixtures.mjs core/tests/fixtures/partial_json_cases.json"
  "gen-path-fixtures.mjs core/tests/fixtures/path_cases.json"
  "gen-resource-fixtures.mjs core/tests/fixtures/resource_cases.json"
  "gen-responses-fixtures.mjs providers/tests/fixtures/responses.json"
  "gen-retry-fixtures.mjs core/tests/fixtures/retry_cases.json"
  "gen-strict-tools-fixtures.mjs providers/tests/fixtures/strict-tools.json"
  "gen-truncate-fixtures.mjs core/tests/fixtures/truncate_cases.json"
  "gen-validation-fixtures.mjs core/tests/fixtures/validation_cases.json"
)
failed=0
for pair in "${pairs[@]}"; do
  read -r script fixture <<<"$pair"
  fresh="$out/$(basename "$fixture")"
  if ! "$node" "$here/scripts/$script" "$original" "$fresh" >"$out/log" 2>&1; then
    echo "$fixture: the generator failed"; cat "$out/log"; failed=1; continue
  fi
  if cmp -s "$fresh" "$here/$fixture"; then
    echo "$fixture: as the original computes it"
  else
    echo "$fixture: DIFFERS from what the original computes now"
    diff <(python3 -m json.tool "$here/$fixture") <(python3 -m json.tool "$fresh") | head -20 || true
    failed=1
  fi
done
exit "$failed"
