#!/usr/bin/env bash
# Runs the MCP client test (tests/mcp/client_test.py) with the official Python SDK against
# `kbtools mcp`. Needs only python3 (and cargo, unless KBTOOLS_BIN names a built binary):
#   - a virtualenv under target/mcp-venv, rebuilt when tests/mcp/requirements.txt or the Python
#     version changes, else reused;
#   - the debug binary (`cargo build`, a no-op when it is up to date), unless KBTOOLS_BIN is set;
#   - the test; its exit code is this script's, its last line `N passed, N failed`.
# Environment: KBTOOLS_BIN (binary to test), PYTHON (interpreter for the venv, default python3).
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON="${PYTHON:-python3}"
VENV=target/mcp-venv
REQUIREMENTS=tests/mcp/requirements.txt
STAMP="$VENV/.installed"

log() { echo "mcp-test: $*" >&2; }

# Makes "$VENV" with a working pip: the venv module, else (Debian without python3-venv) installs
# that package when root, else falls back to virtualenv from PyPI in the user's site.
make_venv() {
    rm -rf "$VENV"
    if "$PYTHON" -m venv "$VENV" >/dev/null 2>&1 && [ -x "$VENV/bin/pip" ]; then
        return 0
    fi
    rm -rf "$VENV"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        local minor
        minor="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
        log "python venv module unusable; installing python3-venv / python${minor}-venv with apt-get"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python${minor}-venv" >/dev/null 2>&1 || true
        if "$PYTHON" -m venv "$VENV" >/dev/null 2>&1 && [ -x "$VENV/bin/pip" ]; then
            return 0
        fi
        rm -rf "$VENV"
    fi
    log "falling back to virtualenv (pip install --user virtualenv)"
    "$PYTHON" -m pip install --user --quiet --disable-pip-version-check virtualenv 2>/dev/null \
        || "$PYTHON" -m pip install --user --quiet --disable-pip-version-check --break-system-packages virtualenv
    "$PYTHON" -m virtualenv --quiet "$VENV"
}

want="$( { "$PYTHON" -c 'import sys; print(sys.version)'; cat "$REQUIREMENTS"; } | sha256sum | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
    log "creating $VENV and installing $REQUIREMENTS"
    make_venv
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS"
    echo "$want" >"$STAMP"
fi

if [ -z "${KBTOOLS_BIN:-}" ]; then
    cargo build --quiet --bin kbtools
    KBTOOLS_BIN=target/debug/kbtools
fi

exec "$VENV/bin/python" tests/mcp/client_test.py "$KBTOOLS_BIN"
