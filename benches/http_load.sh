#!/usr/bin/env bash
# Load benchmark of the local HTTP server: `kbtools serve` (release build) over the SciFact bundle
# (../shared/bundles/scifact, 5,183 pages; skipped with a message when absent), driven by `oha`
# on loopback with a fixed number of connections for a fixed time per scenario:
#   read   GET …/files/content?path=pages/<id>.md   (read_file by path; a few pages in turn)
#   search GET …/files/search?query=<a SciFact claim>  (search_files, hybrid, default limit)
# For each: requests/s, p50 and p99 latency, and the status codes (all must be 200); then the
# server's peak RSS (VmHWM from /proc/<pid>/status).
#
# oha: the one on PATH, else target/tools/bin/oha, else `cargo install oha --locked --root
# target/tools` (crates.io; builds in a few minutes).
# Environment: CONNECTIONS (default 16), DURATION (per scenario, default 10s), BUNDLE (default
# ../shared/bundles/scifact), KBTOOLS_BIN (default: the release build).
# Run: bash benches/http_load.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BUNDLE="${BUNDLE:-../shared/bundles/scifact}"
CONNECTIONS="${CONNECTIONS:-16}"
DURATION="${DURATION:-10s}"
INDEX=target/bench-index/http-load

log() { echo "http-load: $*" >&2; }

if [ ! -d "$BUNDLE" ]; then
    echo "http-load: skipped: $BUNDLE is absent"
    exit 0
fi

OHA="$(command -v oha || true)"
if [ -z "$OHA" ]; then
    if [ ! -x target/tools/bin/oha ]; then
        log "installing oha into target/tools (cargo install oha --locked)"
        cargo install --quiet oha --locked --root target/tools
    fi
    OHA=target/tools/bin/oha
fi

if [ -z "${KBTOOLS_BIN:-}" ]; then
    cargo build --release --quiet --bin kbtools
    KBTOOLS_BIN=target/release/kbtools
fi

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
BASE="http://127.0.0.1:$port"
mkdir -p "$(dirname "$INDEX")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kbtools-http-load.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# The index is kept in target/ between runs; `kbtools index` refreshes it (and replaces one of an
# older index format, which `serve` would refuse).
"$KBTOOLS_BIN" index "$BUNDLE" --index "$INDEX" -q >/dev/null
"$KBTOOLS_BIN" serve "$BUNDLE" --index "$INDEX" --addr "127.0.0.1:$port" -q \
    >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
log "server pid $SERVER_PID on $BASE (indexing $BUNDLE on first use)"
python3 - "$BASE/openapi/v2/health" <<'EOF' || { cat "$WORK/server.log" >&2; exit 1; }
import sys, time, urllib.request
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=2) as response:
            if response.status == 200:
                sys.exit(0)
    except OSError:
        time.sleep(0.5)
sys.exit(1)
EOF

KB="$(python3 - "$BASE" <<'EOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/openapi/v2/knowledge-bases") as response:
    print(json.load(response)["items"][0]["knowledgeBaseId"])
EOF
)"
API="$BASE/openapi/v2/knowledge-bases/$KB"

# read: a few pages by path, in turn (oha reads the URLs from a file).
pages=(pages/10009203.md pages/10010651.md pages/10012166.md pages/10015292.md)
for page in "${pages[@]}"; do
    echo "$API/files/content?path=${page//\//%2F}"
done >"$WORK/read-urls.txt"
QUERY="0-dimensional biomaterials lack inductive properties."
SEARCH_URL="$API/files/search?query=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$QUERY")"

# Each URL answers 200 before the load starts.
while read -r url; do
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()' "$url"
done < <(cat "$WORK/read-urls.txt"; echo "$SEARCH_URL")

# run NAME OHA_ARGS...: one scenario; prints its line and fails on any status but 200.
run() {
    local name="$1"
    shift
    log "$name: $CONNECTIONS connections for $DURATION"
    "$OHA" --no-tui --output-format json -c "$CONNECTIONS" -z "$DURATION" \
        --wait-ongoing-requests-after-deadline "$@" >"$WORK/$name.json"
    python3 - "$name" "$WORK/$name.json" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
report = json.load(open(path))
summary = report["summary"]
latency = report["latencyPercentiles"]
statuses = report.get("statusCodeDistribution", {})
errors = report.get("errorDistribution", {})
print(
    f"{name:<7} {summary['requestsPerSec']:9.1f} req/s   p50 {latency['p50'] * 1000:7.2f} ms"
    f"   p99 {latency['p99'] * 1000:7.2f} ms   statuses {statuses}"
)
if set(statuses) != {"200"} or errors:
    print(f"{name}: not every request answered 200: {statuses} {errors}", file=sys.stderr)
    sys.exit(1)
EOF
}

echo "kbtools serve $(basename "$BUNDLE"): $CONNECTIONS connections, $DURATION per scenario ($(nproc) cores)"
run read --urls-from-file "$WORK/read-urls.txt"
run search "$SEARCH_URL"
rss_kib="$(awk '/^VmHWM:/ { print $2 }' "/proc/$SERVER_PID/status")"
echo "server peak RSS (VmHWM): $((rss_kib / 1024)) MiB"
