#!/usr/bin/env bash
# The short soak of CI: `kbtools serve --watch` on a copy of the fixture bundle for 40 s, a change
# every 0.5 s, two clients querying in a loop (tests/soak/soak.py, Python's standard library
# only). Fails on any failed request, a server that exits, or a peak RSS over 400 MB; the level
# check needs the long run (CONTRIBUTING.md, "Soak test"). Its last line is `N passed, N failed`.
# Environment: KBTOOLS_BIN (binary to test; default the debug build, built when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${KBTOOLS_BIN:-}" ]; then
    cargo build --quiet --bin kbtools
    KBTOOLS_BIN=target/debug/kbtools
fi
exec python3 tests/soak/soak.py --bundle fixtures/focowiki-docs --seconds 40 --windows 4 \
    --binary "$KBTOOLS_BIN" --max-rss 400 --csv target/ci-soak.csv
