#!/usr/bin/env bash
# Installs Debian's chromium for the browser test (tests/web/run.sh): the version this was
# tested with first, else the one the Debian mirror has now (a security update replaces the old
# package there). Needs root or sudo; says so when it has neither.
set -euo pipefail
PINNED=156.0.8078.114-1~deb12u1
if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null; then
    as_root=(sudo -n)
else
    echo "install-chromium: chromium is missing and neither root nor sudo is available: apt-get install chromium" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq >/dev/null || true
if ! "${as_root[@]}" apt-get install -y -qq --no-install-recommends "chromium=$PINNED" >/dev/null; then
    echo "install-chromium: chromium $PINNED is no longer on the mirror; installing the current one" >&2
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
chromium --version >&2
