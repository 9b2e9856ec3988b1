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

log() { echo "mcp-test: $*" >&2; }

. tests/lib/venv.sh
ensure_venv "$VENV" "$REQUIREMENTS" python

if [ -z "${KBTOOLS_BIN:-}" ]; then
    cargo build --quiet --bin kbtools
    KBTOOLS_BIN=target/debug/kbtools
fi

exec "$VENV/bin/python" tests/mcp/client_test.py "$KBTOOLS_BIN"
