#!/usr/bin/env bash
# kbtools against SQLite FTS5, tantivy-py and bm25s on the same pages, interleaved rounds: builds
# (wall, CPU, peak RSS, size) and warm queries (p50, p99), optionally the semantic lane's cost.
# What each figure measures: the docstring of benches/peers.py.
#
# Creates target/bench-venv with the pinned peers (again when the pins change), builds the release
# binary unless --binary is given, and runs benches/peers.py with the venv's python; arguments go
# to peers.py.
#
# Usage: bash benches/peers.sh [BUNDLE | --generate N] [--rounds 3] [--only build,query,semantic]
#                              [--queries Q.jsonl] [--mode hybrid] [--model-dir DIR]
#                              [--binary PATH] [--json OUT]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/target/bench-venv"
pins=(tantivy==0.27.0 bm25s==0.3.16 numpy==2.4.6)
export PYTHONDONTWRITEBYTECODE=1

if [ "$(cat "$venv/.pins" 2>/dev/null)" != "${pins[*]}" ]; then
    echo "peers: installing ${pins[*]} into target/bench-venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}"
    echo "${pins[*]}" >"$venv/.pins"
fi

binary_given=no
for arg in "$@"; do
    case "$arg" in --binary | --binary=*) binary_given=yes ;; esac
done
if [ "$binary_given" = no ]; then
    (cd "$root" && cargo build --release --quiet --bin kbtools)
fi
exec "$venv/bin/python" -B "$root/benches/peers.py" "$@"
