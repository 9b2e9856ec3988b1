#!/usr/bin/env bash
# The replica test of CI (tests/replicas/replicas.py, docs/scaling.md): three `kbtools serve`
# replicas of a published index (copied with rsync) behind Debian's nginx and HAProxy, installed
# when missing (tests/replicas/install.sh). MCP sessions use tests/mcp's virtualenv (made by .ci/run or
# tests/mcp/run.sh). Its last line is `N passed, N failed`.
# Environment: KBTOOLS_BIN (binary to test; default the debug build, built when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${KBTOOLS_BIN:-}" ]; then
    cargo build --quiet --bin kbtools
    KBTOOLS_BIN=target/debug/kbtools
fi
if ! bash tests/replicas/install.sh; then
    echo "0 passed, 1 failed"
    exit 1
fi
mcp_python=()
if [ -x target/mcp-venv/bin/python ]; then
    mcp_python=(--mcp-python target/mcp-venv/bin/python)
fi
exec python3 tests/replicas/replicas.py --binary "$KBTOOLS_BIN" --seconds 20 "${mcp_python[@]}"
