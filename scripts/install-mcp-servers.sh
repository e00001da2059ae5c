#!/usr/bin/env bash
# Installs the real MCP servers the MCP client's tests run against into DIR (default: a new
# temp dir) and prints the line to export for the tests:
#   PI_MCP_NPM_DIR=DIR cargo test -p pi-mcp --test npm_servers
# Needs npm and Node (>= 18); CI sets PI_REQUIRE_MCP_NPM=1 so the tests fail instead of skipping.
set -euo pipefail
dir="${1:-$(mktemp -d)}"
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --silent \
  @modelcontextprotocol/server-filesystem@2026.8.31 \
  @modelcontextprotocol/server-everything@2026.8.31 >&2
echo "PI_MCP_NPM_DIR=$dir"
