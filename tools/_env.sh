# Sourced by the tools: find the repository and make sure its .venv exists and is in sync.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
UV_VERSION="0.13.9"
if [ ! -x "$ROOT/.venv/bin/docbuild" ] || [ "$ROOT/uv.lock" -nt "$ROOT/.venv/.synced" ]; then
  echo "setting up $ROOT/.venv (first run only) ..." >&2
  [ -x "$ROOT/.venv/bin/python" ] || python3 -m venv "$ROOT/.venv"
  [ -x "$ROOT/.venv/bin/uv" ] || "$ROOT/.venv/bin/python" -m pip install --quiet "uv==$UV_VERSION" >&2
  (cd "$ROOT" && .venv/bin/uv sync --frozen --quiet >&2)
  touch "$ROOT/.venv/.synced"
fi
