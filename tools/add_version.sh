#!/usr/bin/env bash
# Add a documentation version to a server: tools/add_version.sh NAME LABEL (--source PATH | --git URL [--ref REF] [--subfolder DIR]) [--url-base URL] [--label-existing OLD_LABEL]
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec "$ROOT/.venv/bin/docbuild" add-version "$@"
