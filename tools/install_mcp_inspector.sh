#!/usr/bin/env bash
# Install the MCP Inspector (npm package @modelcontextprotocol/inspector, pinned with its whole
# dependency tree by tools/mcp-inspector/package-lock.json) into .tools/inspector (git-ignored),
# for tests/test_inspector.py, which drives the runtime server with the Inspector's CLI mode:
#   .tools/inspector/node_modules/.bin/mcp-inspector --cli python SERVER.py -- --method tools/list
# Idempotent: an install whose stamp matches the lock file and whose CLI answers is left alone.
# Needs node and npm (the machine's Node 20 runs it; see docs/runtime-server.md for the caveat).
# Exits non-zero on failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_npm_tool.sh"
npm_tool_options "$@"
# The lock file's only install script (the inspector's own postinstall) does nothing in an
# installed package, so none is run; --loglevel=error hides the EBADENGINE warnings that Node 20
# gets (the inspector declares Node >= 22.19). The CLI prints its version on stdout (and nothing
# else) with --cli --version.
install_npm_tool "MCP Inspector" @modelcontextprotocol/inspector tools/mcp-inspector \
  .tools/inspector mcp-inspector --cli --version
