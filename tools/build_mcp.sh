#!/usr/bin/env bash
# Thin wrapper over `docbuild build` (creates .venv on first use). Run with --help for options.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" build "$@"
