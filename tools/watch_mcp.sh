#!/usr/bin/env bash
# Build a server, then rebuild it incrementally whenever its sources change: tools/watch_mcp.sh NAME [--interval S] [--debounce S]
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" watch "$@"
