#!/usr/bin/env bash
# Serve several built servers from one MCP server (a hub): stdio by default.
# tools/hub_mcp.sh NAME [NAME...] [--config hub.yaml] [--name HUB] [--http [--host H] [--port P]] [--skill]
# NAME: a server under servers/, a server folder, or an installed server package.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
# the runtime's own entry point (`docbuild hub` does the same, after importing the build tools)
exec "$ROOT/.venv/bin/python" -m docserve.hub_launch --servers "$ROOT/servers" "$@"
