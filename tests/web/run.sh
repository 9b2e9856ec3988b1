#!/usr/bin/env bash
# Runs the browser test of the search page (tests/web/browser.mjs) with Debian's chromium driven
# by playwright-core (its own browser download does not work offline; it drives the system one),
# both installed by tests/web/setup.sh when missing, on the binary KBTOOLS_BIN (default
# target/debug/kbtools; this script does not run cargo).
# Screenshots of the main views go to target/web-screenshots/. The last line is `N passed, N
# failed`; the exit code is non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

KBTOOLS_BIN="${KBTOOLS_BIN:-target/debug/kbtools}"

log() { echo "web-test: $*" >&2; }
. tests/web/setup.sh

if [ ! -x "$KBTOOLS_BIN" ]; then
    log "no binary at $KBTOOLS_BIN (run cargo build, or set KBTOOLS_BIN)"
    echo "0 passed, 1 failed"
    exit 1
fi
web_setup || { echo "0 passed, 1 failed"; exit 1; }
exec node tests/web/browser.mjs "$KBTOOLS_BIN"
