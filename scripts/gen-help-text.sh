#!/usr/bin/env bash
# Writes the original Pi's --help output (cli/src/help.txt), which `pi --help` prints as is.
#   scripts/gen-help-text.sh <pi install dir>
set -euo pipefail
"$1/node_modules/.bin/pi" --help > "$(dirname "$0")/../cli/src/help.txt"
