#!/usr/bin/env bash
# Runs schemathesis (property-based OpenAPI testing, pinned in tests/http/requirements.txt)
# against `kbtools serve fixtures/focowiki-docs`, using the document the server serves at
# /openapi/v2/openapi.json. Needs only python3 (and cargo, unless KBTOOLS_BIN names a built
# binary):
#   - a virtualenv under target/http-venv, rebuilt when the requirements or the Python version
#     change, else reused;
#   - the debug binary (`cargo build`, a no-op when it is up to date), unless KBTOOLS_BIN is set;
#   - two runs at once, each against a fresh server on a free loopback port with its own index
#     folder:
#       1. no token: every phase (examples, coverage, fuzzing, stateful), positive and negative
#          data, with every check that applies to a read-only GET API (below);
#       2. `--token`: a quarter of the examples, the same checks plus `ignored_auth` (requests
#          without or with a wrong key must get 401);
#   - its last line `N passed, N failed`: API operations, summed over both runs, as the JUnit
#     reports count them; the exit code is non-zero on any failure.
#
# Checks: all of schemathesis's but two. `unsupported_method` expects 405 for a method the
# document does not list: the contract answers every unknown route or method with 404
# `UNSUPPORTED_ROUTE` (docs/contracts.md#contracts), and kbtools does too.
# `object_level_authorization` needs two users; the server has one key.
# tests/http/hooks.py shapes positive cases by the rules a parameter schema cannot express
# (cursor provenance, the rerank controls' dependency on `rerank=true`, NFC and
# percent-decoding of paths, grapheme count of a query); it never touches negative cases or
# checks.
#
# Environment: KBTOOLS_BIN (binary to test), PYTHON (interpreter for the venv, default python3),
# HTTP_EXAMPLES (examples per operation in run 1, default 100), HTTP_SEED (default 20251130).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"

PYTHON="${PYTHON:-python3}"
VENV=target/http-venv
REQUIREMENTS=tests/http/requirements.txt
EXAMPLES="${HTTP_EXAMPLES:-100}"
SEED="${HTTP_SEED:-20251130}"
CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,positive_data_acceptance,missing_required_header,allow_header_conformance,use_after_free,ensure_resource_availability

log() { echo "http-test: $*" >&2; }

. tests/lib/venv.sh
ensure_venv "$VENV" "$REQUIREMENTS" schemathesis
PY="$VENV/bin/python"

if [ -z "${KBTOOLS_BIN:-}" ]; then
    cargo build --quiet --bin kbtools
    KBTOOLS_BIN=target/debug/kbtools
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kbtools-http.XXXXXX")"
SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
RUN_PIDS=()
# The runs start and stop their own servers; a script stopped early stops the runs first.
trap 'kill "${RUN_PIDS[@]}" 2>/dev/null || true; wait; rm -rf "$WORK"' EXIT

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server NAME: a fresh server on a free port, with `--token` when TOKEN is set; sets BASE.
start_server() {
    local name="$1"
    local port
    port="$(free_port)"
    "$KBTOOLS_BIN" serve fixtures/focowiki-docs --index "$WORK/index-$name" \
        --addr "127.0.0.1:$port" -q ${TOKEN:+--token "$TOKEN"} >"$WORK/server-$name.log" 2>&1 &
    SERVER_PID=$!
    BASE="http://127.0.0.1:$port"
    # The first start builds the index; wait for /openapi/v2/health (up to 600 s: a hang
    # guard, not a speed bound; each probe that times out is tried again).
    if ! "$PY" - "$BASE/openapi/v2/health" "${TOKEN:-}" <<'EOF'
import sys, time, urllib.request
url, token = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            if response.status == 200:
                sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
EOF
    then
        log "the server did not answer /openapi/v2/health; its log:"
        cat "$WORK/server-$name.log" >&2
        return 1
    fi
}

# run_schemathesis NAME EXAMPLES CHECKS [schemathesis flags...]: one run, JUnit report in $WORK.
run_schemathesis() {
    local name="$1" examples="$2" checks="$3"
    shift 3
    log "run '$name': $examples examples per operation, seed $SEED"
    local status=0
    # From the scratch folder, so nothing schemathesis or hypothesis writes lands in the tree.
    # `--request-timeout` is a hang guard, not a speed bound (a debug build on a loaded machine).
    (cd "$WORK" && SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$ROOT/tests/http" \
        "$ROOT/$VENV/bin/schemathesis" --config-file "$ROOT/tests/http/schemathesis.toml" run \
        "$BASE/openapi/v2/openapi.json" \
        --checks "$checks" \
        --max-examples "$examples" \
        --seed "$SEED" \
        --generation-database none \
        --request-timeout 300 \
        --workers 1 \
        --no-color \
        --report junit --report-junit-path "$WORK/junit-$name.xml" \
        "$@") || status=$?
    return "$status"
}

# count_junit FILE STATUS: prints "passed failed" API operations of a JUnit report (one test
# case per operation); a failure of the stateful scenarios (their own test case), or a run that
# failed without a failing operation in its report, counts one more failure.
count_junit() {
    "$PY" - "$1" "$2" <<'EOF'
import sys, xml.etree.ElementTree as ET
path, status = sys.argv[1], int(sys.argv[2])
try:
    cases = list(ET.parse(path).getroot().iter("testcase"))
except (OSError, ET.ParseError):
    cases = []
def failing(case):
    return case.find("failure") is not None or case.find("error") is not None
operations = [c for c in cases if c.get("name", "") != "Stateful tests"]
passed = sum(1 for c in operations if not failing(c))
failed = sum(1 for c in cases if failing(c))
if status != 0 and failed == 0:
    failed = 1
print(passed, failed)
EOF
}

# one_run NAME EXAMPLES CHECKS [schemathesis flags...]: a fresh server, one schemathesis run
# against it, the server stopped; writes "PASSED FAILED STATUS" to $WORK/result-NAME. The two
# runs go at once, each in its own subshell with its own server (a run keeps about one core
# busy, and the machine has two): 65 s + 37 s one after the other here.
one_run() {
    local name="$1" examples="$2" checks="$3"
    shift 3
    trap stop_server EXIT
    local status=0 passed failed
    if start_server "$name"; then
        run_schemathesis "$name" "$examples" "$checks" "$@" || status=$?
    else
        status=1
    fi
    stop_server
    read -r passed failed < <(count_junit "$WORK/junit-$name.xml" "$status")
    log "run '$name': $passed operations passed, $failed failed (schemathesis exit $status)"
    echo "$passed $failed $status" >"$WORK/result-$name"
}

(TOKEN="" one_run open "$EXAMPLES" "$CHECKS") &
RUN_PIDS+=($!)
(
    TOKEN="kbtools-schemathesis-$RANDOM$RANDOM"
    one_run token "$(( (EXAMPLES + 3) / 4 ))" "$CHECKS,ignored_auth" \
        --header "Authorization: Bearer $TOKEN"
) &
RUN_PIDS+=($!)
for run_pid in "${RUN_PIDS[@]}"; do wait "$run_pid" || true; done
RUN_PIDS=()

overall=0
total_passed=0
total_failed=0
for name in open token; do
    # A run that died before writing its result counts one failure.
    read -r passed failed status <"$WORK/result-$name" 2>/dev/null || {
        passed=0 failed=1 status=1
        log "run '$name' ended without a result"
    }
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    [ "$status" = 0 ] || overall=1
done

echo "$total_passed passed, $total_failed failed"
exit "$overall"
