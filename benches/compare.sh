#!/usr/bin/env bash
# Whole-process comparison, on the same pages/**/*.md files and in one run, of
#
#   build   `kbtools index` vs a SQLite FTS5 index build (Python's sqlite3: FTS5 table
#           path UNINDEXED, title, body, default unicode61 tokenizer, every page in one
#           transaction): median wall time of the whole process, peak RSS, size on disk;
#   query   a cold `kbtools call search_files` (mode file, limit 10) vs a cold python3 process
#           running the FTS5 query (bm25, top 10, the query as an OR of quoted tokens) vs
#           `rg -i -l` with the query's terms as alternatives over pages/: median and p90 ms,
#           plus the warm in-process FTS5 median;
#
# and the ratios (FTS5/kbtools, rg/kbtools). Details in benches/compare.py.
#
# Usage: bash benches/compare.sh [BUNDLE | --generate N] [--queries Q.jsonl]
#                                [--queries-count 50] [--builds 3] [--fts-trigram]
#   BUNDLE        default ../shared/bundles/scifact (a skip line and exit 0 when absent)
#   --generate N  N synthetic pages in target/bench-bundles/gen-N (seed 1, reused when present)
#   --queries     default BUNDLE/.bench-queries.jsonl, else ../shared/corpora/scifact/queries.jsonl
#                 for scifact, else page titles
# Installs ripgrep and GNU time with apt-get when missing; runs `cargo build --release`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
missing=()
command -v rg >/dev/null || missing+=(ripgrep)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    echo "compare: installing ${missing[*]} with apt-get" >&2
    if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
    "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
exec python3 "$root/benches/compare.py" "$@"
