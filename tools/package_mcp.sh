#!/usr/bin/env bash
# Package a built server for end users: servers/NAME/dist/ gets the server's wheel, the shared
# model wheel, an MCP Bundle (.mcpb) per platform and server.json for the MCP Registry.
# tools/package_mcp.sh NAME [--platform host|linux-x86_64|linux-arm64|macos-arm64|macos-x86_64|windows-x86_64 ...]
#                           [--python 3.12] [--no-bundle]
# See docs/distribution.md.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" package "$@"
