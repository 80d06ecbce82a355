#!/usr/bin/env bash
# Serve several built servers from one MCP server (a hub): stdio by default.
# tools/hub_mcp.sh NAME [NAME...] [--config hub.yaml] [--name HUB] [--http [--host H] [--port P]]
# NAME: a server under servers/, a server folder, or an installed server package.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" hub "$@"
