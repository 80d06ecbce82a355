#!/usr/bin/env bash
# Ask a built server a question through a real MCP client: tools/ask_mcp.sh NAME "question" [--mode M] [--top-k N] [--url URL]
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" ask "$@"
