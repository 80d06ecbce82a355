#!/usr/bin/env bash
# Install PostgreSQL for tests/test_lake_postgres.py (a shared DuckLake catalog), when missing.
# Idempotent: does nothing when /usr/lib/postgresql/*/bin/initdb exists. As root with apt-get (CI)
# it installs Debian's postgresql package; otherwise it says what to install (the test then skips).
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  echo "postgresql: already installed ($(compgen -G "/usr/lib/postgresql/*/bin/initdb" | head -1))"
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "postgresql: not installed; tests/test_lake_postgres.py will skip its PostgreSQL tests." >&2
  echo "  install it with: sudo apt-get install -y --no-install-recommends postgresql" >&2
  exit 0
fi
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends postgresql
echo "postgresql: installed in $(($(date +%s) - start)) s"
