#!/usr/bin/env bash
# Put the MCP Registry's official server.json schema, version 2025-12-11, at
# .tools/registry-schema/server.schema.json (git-ignored), with its upstream MIT LICENSE and
# SCHEMA-SOURCE.md beside it, for checking the server.json files the project writes.
# The schema is published at
#   https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json
# which CI cannot reach (only the package registries are), so it comes from PyPI: the wheel of
# skillsaw==0.22.0 (pinned by its sha256) ships a byte-identical copy, at
# skillsaw/schemas/mcp_registry/v2025_12_11/. Only that wheel is downloaded, without its
# dependencies and without installing it, and the schema must match the pinned SCHEMA_SHA256.
# Idempotent: a schema already in place with that hash is left alone. Exits non-zero on failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.tools/registry-schema"
LABEL=".tools/registry-schema"
WHEEL="skillsaw==0.22.0"
WHEEL_SHA256="7c4b4f48961d9b1676831aeb65396ddc59a18efac39e505b0dfe500f4c055906"
MEMBER_DIR="skillsaw/schemas/mcp_registry/v2025_12_11"
SCHEMA_SHA256="3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"
case "${1:-}" in
  "") ;;
  -h | --help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "unknown option: $1 (use --help)" >&2; exit 2 ;;
esac

schema="$DEST/server.schema.json"
if [ -f "$schema" ] && [ "$(sha256sum <"$schema" | cut -d' ' -f1)" = "$SCHEMA_SHA256" ]; then
  echo "$LABEL: server.json schema 2025-12-11 already in place"
  exit 0
fi

# The project's .venv (set up by _env.sh on a fresh checkout) has the pip that downloads the wheel.
source "$ROOT/tools/_env.sh"
start=$(date +%s)
echo "$LABEL: fetching the server.json schema 2025-12-11 from PyPI ($WHEEL) ..."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "$WHEEL --hash=sha256:$WHEEL_SHA256" >"$tmp/requirements.txt"
if ! "$ROOT/.venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
  --only-binary=:all: --require-hashes -r "$tmp/requirements.txt" -d "$tmp/wheel"; then
  echo "$LABEL: pip download of $WHEEL failed" \
    "(see above: is PyPI reachable? does the wheel still match its hash?)" >&2
  exit 1
fi
# Extract the schema and the files beside it into $tmp/out, checking the schema's hash.
if ! "$ROOT/.venv/bin/python" - "$tmp/wheel" "$MEMBER_DIR" "$SCHEMA_SHA256" "$tmp/out" <<'EOF'; then
import glob, hashlib, os, sys, zipfile

wheel_dir, member_dir, want, out = sys.argv[1:]
wheels = glob.glob(os.path.join(wheel_dir, "*.whl"))
if len(wheels) != 1:
    sys.exit(f"expected one wheel in {wheel_dir}, found {wheels}")
os.makedirs(out)
with zipfile.ZipFile(wheels[0]) as wheel:
    names = set(wheel.namelist())
    for name in ("server.schema.json", "LICENSE", "SCHEMA-SOURCE.md"):
        member = f"{member_dir}/{name}"
        if member not in names:
            if name == "server.schema.json":
                sys.exit(f"{member} is not in {os.path.basename(wheels[0])}")
            continue
        data = wheel.read(member)
        if name == "server.schema.json":
            got = hashlib.sha256(data).hexdigest()
            if got != want:
                sys.exit(f"{member} has sha256 {got}, not the pinned {want}")
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
EOF
  echo "$LABEL: could not extract a schema with the pinned hash from the wheel" >&2
  exit 1
fi
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
mv "$tmp/out" "$DEST"
echo "$LABEL: server.json schema 2025-12-11 installed in $(($(date +%s) - start)) s" \
  "($(cd "$DEST" && echo *))"
