#!/usr/bin/env bash
# The maintainers' web page for every server: tools/ui_mcp.sh [--port P] [--host H] (127.0.0.1:8780)
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" ui "$@"
