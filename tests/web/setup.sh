# What drives the search page in a browser, for tests/web/run.sh (the browser test) and
# benches/page_latency.sh (the page's latency), sourced from the repository root:
#   - chromium: /usr/bin/chromium, installed from Debian by tests/web/install-chromium.sh when
#     missing (CHROMIUM names another);
#   - playwright-core, pinned, installed with npm under target/web (reused when it is there).
# `web_setup` installs what is missing and exports CHROMIUM and PLAYWRIGHT_CORE; it returns
# non-zero, having said why through the caller's `log`, when it cannot.

PLAYWRIGHT_VERSION=1.65.1

web_setup() {
    local prefix=target/web installed
    export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
    if [ ! -x "$CHROMIUM" ]; then
        bash tests/web/install-chromium.sh >&2 || return 1
    fi
    installed="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' \
        "$prefix/node_modules/playwright-core/package.json" 2>/dev/null || true)"
    if [ "$installed" != "$PLAYWRIGHT_VERSION" ]; then
        log "installing playwright-core@$PLAYWRIGHT_VERSION under $prefix"
        mkdir -p "$prefix"
        if ! npm install --no-save --no-audit --no-fund --prefix "$prefix" \
            "playwright-core@$PLAYWRIGHT_VERSION" >"$prefix/npm-install.log" 2>&1; then
            cat "$prefix/npm-install.log" >&2
            log "npm install failed"
            return 1
        fi
    fi
    export PLAYWRIGHT_CORE="$PWD/$prefix/node_modules/playwright-core"
}
