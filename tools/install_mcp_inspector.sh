#!/usr/bin/env bash
# Install the MCP Inspector (npm package @modelcontextprotocol/inspector, pinned with its whole
# dependency tree by tools/mcp-inspector/package-lock.json) into .tools/inspector (git-ignored),
# for tests/test_inspector.py, which drives the runtime server with the Inspector's CLI mode:
#   .tools/inspector/node_modules/.bin/mcp-inspector --cli python SERVER.py -- --method tools/list
# Idempotent: an install whose stamp matches the lock file and whose CLI answers is left alone.
# Needs node and npm (the machine's Node 20 runs it; see docs/runtime-server.md for the caveat).
# Exits non-zero on failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPEC="$ROOT/tools/mcp-inspector"
PREFIX="$ROOT/.tools/inspector"
CLI="$PREFIX/node_modules/.bin/mcp-inspector"
case "${1:-}" in
  "") ;;
  -h | --help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "unknown option: $1 (use --help)" >&2; exit 2 ;;
esac

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo ".tools/inspector: '$tool' not found: install Node.js (with npm) first" >&2
    exit 1
  fi
done
VERSION="$(node -p 'require(process.argv[1]).dependencies["@modelcontextprotocol/inspector"]' \
  "$SPEC/package.json")"

stamp="$PREFIX/.installed"
spec="$(cat "$SPEC/package.json" "$SPEC/package-lock.json" | sha256sum | cut -d' ' -f1)"
# The CLI prints its version on stdout (and nothing else with --version).
works() { [ "$("$CLI" --cli --version 2>/dev/null)" = "$VERSION" ]; }
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ] && works; then
  echo ".tools/inspector: MCP Inspector $VERSION already installed ($(du -sh "$PREFIX" | cut -f1))"
  exit 0
fi

start=$(date +%s)
echo ".tools/inspector: installing @modelcontextprotocol/inspector@$VERSION (node $(node --version)) ..."
rm -rf "$PREFIX"
mkdir -p "$PREFIX"
cp "$SPEC/package.json" "$SPEC/package-lock.json" "$PREFIX/"
# npm ci installs exactly the lock file's tree; its only install script (the inspector's own
# postinstall) does nothing in an installed package, so none is run. --loglevel=error hides the
# EBADENGINE warnings that Node 20 gets (the inspector declares Node >= 22.19).
if ! (cd "$PREFIX" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error); then
  echo ".tools/inspector: npm ci failed (is the npm registry reachable? 'npm config get registry')" >&2
  exit 1
fi
if ! works; then
  "$CLI" --cli --version >&2 || true
  echo ".tools/inspector: installed, but '$CLI --cli --version' does not print $VERSION" >&2
  exit 1
fi
echo "$spec" >"$stamp"
echo ".tools/inspector: MCP Inspector $VERSION installed in $(($(date +%s) - start)) s ($(du -sh "$PREFIX" | cut -f1))"
