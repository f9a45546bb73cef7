#!/usr/bin/env bash
# Installs the MCP reference servers that tests/tools/test_mcp_reference_servers.py
# runs against, into the project-local folder .mcp-servers/ (nothing global):
#   @modelcontextprotocol/server-everything   every protocol feature (images, resources,
#                                             progress, tasks, annotations, HTTP transport)
#   @modelcontextprotocol/server-filesystem   files under allowed folders
# from the npm registry, at pinned versions (the tests' facts were observed against
# them). The Python ones (mcp-server-time, mcp-server-git) come with the test extra.
# Needs node >= 18 and npm (scripts/install-system-libraries.sh --tests installs them).
# It fails loudly: in CI a tier that cannot run must not pass by skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
EVERYTHING_VERSION="2026.8.31"
FILESYSTEM_VERSION="2026.8.31"
PREFIX=.mcp-servers
start=$(date +%s)

command -v npm >/dev/null 2>&1 || {
    echo "install_mcp_servers.sh: npm not found; run scripts/install-system-libraries.sh --tests" >&2
    exit 1; }
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error --ignore-scripts \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
    "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION" >/dev/null
for bin in mcp-server-everything mcp-server-filesystem; do
    [ -x "$PREFIX/node_modules/.bin/$bin" ] || {
        echo "install_mcp_servers.sh: $bin missing after npm install" >&2; exit 1; }
done
echo "install_mcp_servers.sh: server-everything $EVERYTHING_VERSION, server-filesystem" \
     "$FILESYSTEM_VERSION in $PREFIX ($(( $(date +%s) - start )) s)"
