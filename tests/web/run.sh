#!/usr/bin/env bash
# Runs the browser test of the search page (tests/web/browser.mjs) with Debian's chromium driven
# by playwright-core (its own browser download does not work offline; it drives the system one):
#   - chromium: /usr/bin/chromium, installed from Debian by tests/web/install-chromium.sh when
#     missing (CHROMIUM names another);
#   - playwright-core, pinned, installed with npm under target/web (reused when it is there);
#   - the binary KBTOOLS_BIN (default target/debug/kbtools; this script does not run cargo).
# Screenshots of the main views go to target/web-screenshots/. The last line is `N passed, N
# failed`; the exit code is non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

PLAYWRIGHT_VERSION=1.65.1
PREFIX=target/web
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
KBTOOLS_BIN="${KBTOOLS_BIN:-target/debug/kbtools}"

log() { echo "web-test: $*" >&2; }

if [ ! -x "$CHROMIUM" ]; then
    bash tests/web/install-chromium.sh >&2 || { echo "0 passed, 1 failed"; exit 1; }
fi
if [ ! -x "$KBTOOLS_BIN" ]; then
    log "no binary at $KBTOOLS_BIN (run cargo build, or set KBTOOLS_BIN)"
    echo "0 passed, 1 failed"
    exit 1
fi
installed="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' \
    "$PREFIX/node_modules/playwright-core/package.json" 2>/dev/null || true)"
if [ "$installed" != "$PLAYWRIGHT_VERSION" ]; then
    log "installing playwright-core@$PLAYWRIGHT_VERSION under $PREFIX"
    mkdir -p "$PREFIX"
    if ! npm install --no-save --no-audit --no-fund --prefix "$PREFIX" \
        "playwright-core@$PLAYWRIGHT_VERSION" >"$PREFIX/npm-install.log" 2>&1; then
        cat "$PREFIX/npm-install.log" >&2
        log "npm install failed"
        echo "0 passed, 1 failed"
        exit 1
    fi
fi
PLAYWRIGHT_CORE="$PWD/$PREFIX/node_modules/playwright-core" exec node tests/web/browser.mjs \
    "$KBTOOLS_BIN"
