#!/usr/bin/env bash
# Ask a built server a question through a real MCP client and print what the model reads:
# tools/ask_mcp.sh NAME "question" [--mode M] [--top-k N] [--path P] [--section S] [--version V] [--url URL]
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" ask "$@"
