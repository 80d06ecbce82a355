#!/usr/bin/env bash
# Measure retrieval quality of a built server: tools/eval_mcp.sh NAME (--queries FILE | --beir DIR) [--modes ...] [--json FILE]
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" eval "$@"
