#!/usr/bin/env bash
# Run the test suite (creates .venv on first use). Extra arguments go to pytest;
# --fast runs the inner loop only (readers, chunking, search parts, links; under 2 minutes).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
cd "$ROOT"
.venv/bin/ruff check shared tests bench
exec .venv/bin/python -m pytest "$@"
