#!/usr/bin/env bash
# CI: the outside contract checker (../shared/tools/contract_check.py, which the project does not
# own) on the binary `cargo test` built: every check on the focowiki-docs bundle, and a sample
# (`--quick`) on cmrc2018-zh. Any FAIL line fails. Without ../shared beside the checkout it says
# SKIPPED and counts nothing. Prints "N passed, M failed" for .ci/run's totals.
set -uo pipefail
cd "$(dirname "$0")/../.."
log() { echo "contract: $*" >&2; }
checker=../shared/tools/contract_check.py
bin="${KBTOOLS_BIN:-target/debug/kbtools}"
if [ ! -f "$checker" ]; then
    echo "SKIPPED: the contract checker: no $checker beside this checkout"
    echo "0 passed, 0 failed"
    exit 0
fi
. tests/lib/venv.sh
ensure_venv target/contract-venv tests/contract/requirements.txt python
python=target/contract-venv/bin/python
passed=0
failed=0
status=0
for run in "focowiki-docs" "cmrc2018-zh --quick"; do
    read -r bundle quick <<<"$run"
    out="target/contract-$bundle.log"
    # shellcheck disable=SC2086 # $quick is empty or one flag
    "$python" "$checker" --kbtools "$bin" --bundle "../shared/bundles/$bundle" --work-copy \
        --timeout 300 $quick >"$out" 2>&1 || status=1
    grep -E '^\s*FAIL' "$out" | sed "s/^/$bundle: /" || true
    line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)"
    if [ -z "$line" ]; then
        echo "$bundle: the checker did not finish:"
        tail -n 20 "$out"
        failed=$((failed + 1))
        status=1
        continue
    fi
    echo "$bundle: $line"
    read -r p _ f _ <<<"${line//,/}"
    passed=$((passed + p))
    failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$status" = 0 ] && [ "$failed" = 0 ]
