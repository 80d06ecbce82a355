#!/usr/bin/env bash
# Build a server, then rebuild it incrementally whenever its sources change (a site source is resynced every interval): tools/watch_mcp.sh NAME [--interval DURATION] [--debounce S]
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" watch "$@"
