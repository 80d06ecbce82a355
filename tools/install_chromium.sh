#!/usr/bin/env bash
# Install Chromium for tests/test_ui_browser.py (the web page opened in a real headless browser),
# when missing. Idempotent: does nothing when chromium is on PATH. As root with apt-get (CI) it
# installs Debian's chromium package; otherwise it says what to install (the test then skips).
set -euo pipefail
if command -v chromium >/dev/null; then
  echo "chromium: already installed ($(command -v chromium))"
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "chromium: not installed; tests/test_ui_browser.py will skip." >&2
  echo "  install it with: sudo apt-get install -y --no-install-recommends chromium" >&2
  exit 0
fi
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
echo "chromium: installed in $(($(date +%s) - start)) s"
