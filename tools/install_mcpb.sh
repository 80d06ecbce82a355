#!/usr/bin/env bash
# Install the MCP Bundle CLI, mcpb (npm package @anthropic-ai/mcpb, pinned with its whole
# dependency tree by tools/mcpb/package-lock.json) into .tools/mcpb (git-ignored), a validator
# nobody here wrote for the bundles the project builds; it works offline:
#   .tools/mcpb/node_modules/.bin/mcpb validate DIR_WITH_MANIFEST_JSON
# Idempotent: an install whose stamp matches the lock file and whose CLI answers is left alone.
# Needs node and npm (Node 20 runs it). Exits non-zero on failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_npm_tool.sh"
npm_tool_options "$@"
# No package in the lock file has an install script, so --ignore-scripts skips nothing.
# mcpb --version prints its version on stdout (and nothing else).
install_npm_tool "mcpb" @anthropic-ai/mcpb tools/mcpb .tools/mcpb mcpb --version
