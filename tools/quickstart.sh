#!/usr/bin/env bash
# The main job: build the example server from this repository's docs/ and ask it a question
# through a real MCP client (stdio). Works offline. Pass a question to ask something else.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
cd "$ROOT"
NAME=docs-mcp-docs
QUESTION="${1:-How do I build a server for my own documentation?}"
if [ ! -f "servers/$NAME/config/processing_config.yaml" ]; then
  tools/scaffold_new_mcp.sh "$NAME" --source docs --format md
fi
tools/build_mcp.sh "$NAME"
echo
echo "Asking $NAME through an MCP client: $QUESTION"
tools/ask_mcp.sh "$NAME" "$QUESTION"
