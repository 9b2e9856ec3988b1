#!/usr/bin/env bash
# Installs kbtools the ways a user without a compiler does, from the packages
# tests/packaging/build.sh makes, and runs it through each install (docs/packaging.md):
#   - the wheel: tagged manylinux, holding the binary alone; `pip install --no-index` into a
#     fresh venv; `kbtools --version`, no test hook in it, a search of a fresh copy of
#     fixtures/focowiki-docs, and the MCP client suite (tests/mcp/client_test.py) against the
#     installed binary;
#   - `uvx --offline --from <wheel> kbtools mcp …`: `initialize` and `tools/list` over stdio;
#   - the npm tarballs: `npm install --offline` into a fresh folder with an empty npm cache;
#     `npx --offline kbtools --version`, a search, the exit code and SIGTERM passed through, the
#     launcher's error when the platform package is missing;
#   - the release workflow (.github/workflows/release.yml) linted with jactionlint in its
#     `correctness` profile (the checks of actionlint).
# Each check counts once, the MCP client suite by its own checks; the last line is
# `N passed, N failed`, and the exit code 1 when a check failed.
# Environment: KBTOOLS_PACKAGES_BUILT=1 uses target/packaging/dist as it is (.ci/run builds it
# beforehand); otherwise tests/packaging/build.sh runs first.
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { echo "packaging: $*" >&2; }
DIST=target/packaging/dist
QUESTION="How do agents read related files?"

. tests/lib/venv.sh
ensure_venv target/packaging-venv tests/packaging/requirements.txt maturin
ensure_venv target/mcp-venv tests/mcp/requirements.txt python
if [ "${KBTOOLS_PACKAGES_BUILT:-}" != 1 ]; then
    bash tests/packaging/build.sh
fi

version="$(sed -n '/^\[package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)"
shopt -s nullglob
wheels=("$DIST"/kbtools-"$version"-*.whl)
tarballs=("$DIST"/kbtools-"$version".tg[z] "$DIST"/kbtools-cli-*-"$version".tgz)
shopt -u nullglob
if [ "${#wheels[@]}" != 1 ] || [ "${#tarballs[@]}" != 2 ]; then
    log "expected one wheel and two npm tarballs of version $version in $DIST, found:" \
        "${wheels[*]:-no wheel} ${tarballs[*]:-no tarball}; run tests/packaging/build.sh"
    echo "0 passed, 1 failed"
    exit 1
fi
wheel="$(realpath "${wheels[0]}")"
for i in "${!tarballs[@]}"; do tarballs[i]="$(realpath "${tarballs[i]}")"; done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# Nothing of this run lands in the user's folders (the index goes to the cache folder), and no
# model installed there is used: a fresh install has none.
export XDG_CACHE_HOME="$scratch/cache" XDG_DATA_HOME="$scratch/data"
fixture="$scratch/focowiki-docs"
cp -r fixtures/focowiki-docs "$fixture"

passed=0
failed=0
# check NAME COMMAND...: runs COMMAND, counts it, and shows its output's tail when it failed.
check() {
    local name="$1" output
    shift
    if output="$("$@" 2>&1)"; then
        passed=$((passed + 1))
        echo "ok: $name"
    else
        failed=$((failed + 1))
        echo "FAILED: $name"
        tail -n 40 <<<"$output" | sed 's/^/    /'
    fi
}

# A search's JSON on stdin has at least one result, and each names a page of the fixture.
search_found() {
    python3 -c '
import json, os, sys
items = json.load(sys.stdin)["items"]
assert items, "the search found nothing"
missing = [i["path"] for i in items if not os.path.isfile(os.path.join(sys.argv[1], i["path"]))]
assert not missing, f"results that are not files of the fixture: {missing}"
print(len(items), "results, the first", items[0]["path"])
' "$fixture"
}

wheel_contents() {
    python3 - "$wheel" "$version" <<'PY'
import re, sys, zipfile
wheel, version = sys.argv[1], sys.argv[2]
tag = re.fullmatch(rf"kbtools-{re.escape(version)}-py3-none-(manylinux_2_\d+_\w+?)(\.manylinux\w+)*\.whl",
                   wheel.rsplit("/", 1)[-1])
assert tag, f"{wheel} is not tagged py3-none-manylinux_2_N_ARCH"
names = zipfile.ZipFile(wheel).namelist()
payload = [n for n in names if not n.startswith(f"kbtools-{version}.dist-info/")]
assert payload == [f"kbtools-{version}.data/scripts/kbtools"], f"the wheel holds more than the binary: {payload}"
print(f"{tag.group(1)}: {payload[0]}")
PY
}

pip_install() {
    python3 -m venv "$scratch/venv"
    "$scratch/venv/bin/pip" install --no-index --no-cache-dir --disable-pip-version-check "$wheel"
}

version_is() {
    local got
    got="$("$@" --version)"
    [ "$got" = "kbtools $version" ] || { echo "$* --version printed '$got', not 'kbtools $version'"; return 1; }
}

search() {
    "$@" search "$QUESTION" --bundle "$fixture" --format json | search_found
}

check "the wheel is tagged manylinux and holds the binary alone" wheel_contents
check "pip install --no-index of the wheel into a fresh venv" pip_install
installed="$scratch/venv/bin/kbtools"
check "the installed kbtools --version is $version" version_is "$installed"
# The `testing` feature's hooks (src/index/build/publish.rs) stay out of what users install.
no_test_hooks() {
    if grep -q KBTOOLS_CRASH_AT "$installed"; then
        echo "$installed holds the crash tests' hook KBTOOLS_CRASH_AT: built with the testing feature"
        return 1
    fi
}
check "the installed binary has no test hooks (feature testing off)" no_test_hooks
check "a search through the installed kbtools" search "$installed"

# The MCP client suite against the installed release binary (no `testing` feature), its checks
# counted one by one.
echo "== the MCP client suite against $installed"
suite_status=0
target/mcp-venv/bin/python tests/mcp/client_test.py "$installed" >"$scratch/suite.log" 2>&1 || suite_status=$?
cat "$scratch/suite.log"
suite="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$scratch/suite.log" | tail -n 1 || true)"
if [ -n "$suite" ]; then
    read -r suite_passed _ suite_failed _ <<<"${suite//,/}"
    passed=$((passed + suite_passed))
    failed=$((failed + suite_failed))
    if [ "$suite_status" != 0 ] && [ "$suite_failed" = 0 ]; then failed=$((failed + 1)); fi
else
    echo "FAILED: the MCP client suite did not get to its summary (exit $suite_status)"
    failed=$((failed + 1))
fi

# uvx with an empty cache, offline, no Python download: the wheel file is all it gets.
check "uvx --offline --from the wheel: kbtools mcp answers initialize and tools/list" \
    env UV_CACHE_DIR="$scratch/uv-cache" UV_PYTHON_DOWNLOADS=never UV_NO_CONFIG=1 \
    target/mcp-venv/bin/python tests/packaging/stdio_checks.py mcp-tools -- \
    "$(realpath target/packaging-venv/bin/uvx)" --offline --from "$wheel" kbtools \
    mcp "$fixture" --index "$scratch/uvx-index" -q

project="$scratch/npm-project"
npm_install() {
    mkdir -p "$project"
    echo '{"name": "kbtools-install-check", "private": true}' >"$project/package.json"
    (cd "$project" && npm install --offline --cache "$scratch/npm-cache" --no-audit --no-fund \
        "${tarballs[@]}")
}
npx_kbtools() {
    (cd "$project" && npx --offline --cache "$scratch/npm-cache" kbtools "$@")
}
# A contract error (exit 1, the answer on stdout) and a usage error (exit 2): the same exit code
# and the same stdout through npx as from the binary (but for the answer's random requestId).
exit_code_passes() {
    local args direct launched direct_out launched_out
    for args in "read pages/no-such-page.md --bundle $fixture" "search --no-such-flag"; do
        direct=0 launched=0
        # shellcheck disable=SC2086 # the arguments are split on purpose
        direct_out="$("$installed" $args 2>/dev/null)" || direct=$?
        # shellcheck disable=SC2086
        launched_out="$(npx_kbtools $args 2>/dev/null)" || launched=$?
        # shellcheck disable=SC2001 # a pattern, which ${var//…} does not take
        direct_out="$(sed 's/"requestId":"[^"]*"//' <<<"$direct_out")"
        # shellcheck disable=SC2001
        launched_out="$(sed 's/"requestId":"[^"]*"//' <<<"$launched_out")"
        if [ "$direct" = 0 ] || [ "$launched" != "$direct" ] || [ "$launched_out" != "$direct_out" ]; then
            echo "kbtools $args: the binary exits $direct, through npx $launched (stdout the same: $([ "$launched_out" = "$direct_out" ] && echo yes || echo no))"
            return 1
        fi
        echo "kbtools $args: exit $direct either way"
    done
}
missing_platform_named() {
    local platform_dir status=0 stderr
    platform_dir="$(cd "$project/node_modules/@kbtools" && ls -d cli-*)"
    mv "$project/node_modules/@kbtools" "$scratch/hidden"
    stderr="$(node "$project/node_modules/kbtools/bin/kbtools.js" --version 2>&1 >/dev/null)" || status=$?
    mv "$scratch/hidden" "$project/node_modules/@kbtools"
    echo "$stderr"
    if [ "$status" != 2 ] || ! grep -q "@kbtools/$platform_dir" <<<"$stderr"; then
        echo "expected exit 2 and the package @kbtools/$platform_dir named; got exit $status"
        return 1
    fi
}
check "npm install --offline of the two tarballs into a fresh folder" npm_install
check "npx --offline kbtools --version is $version" version_is npx_kbtools
check "a search through npx --offline kbtools" search npx_kbtools
check "the npm launcher passes the binary's exit code through" exit_code_passes
check "SIGTERM to the npm launcher ends the binary it runs" \
    target/mcp-venv/bin/python tests/packaging/stdio_checks.py sigterm -- \
    node "$project/node_modules/kbtools/bin/kbtools.js" mcp "$fixture" --index "$scratch/npx-index" -q
check "the npm launcher names the platform package that is missing" missing_platform_named

check "the release workflow passes jactionlint" \
    target/packaging-venv/bin/jactionlint --profile correctness .github/workflows/release.yml

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
