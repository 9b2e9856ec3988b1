#!/usr/bin/env bash
# Side-by-side timing on BEIR SciFact's 300 test queries (queries.jsonl filtered to the ids of
# qrels/test.tsv), one cold process per query for both tools:
#
#   rg       `rg -i -l -e term1 -e term2 … ../shared/bundles/scifact/pages`, where the terms are
#            the query's lowercased words of 3 letters or more. It lists every page holding any
#            term (unranked; the matched-file count is printed too), so it is a floor for "find
#            files mentioning these words", not a search of equal quality.
#   kbtools  `target/release/kbtools --index <built once> call search_files
#             '{"query": …, "mode": "hybrid"}'` (ranked top 10 with excerpts, graph context and
#            the full contract JSON).
#
# One untimed warm-up pass of each (page cache warm, as on a machine in use), then each query is
# timed once; prints median and p99 (nearest rank) in ms. Needs python3 and ripgrep
# (`apt-get update && apt-get install -y ripgrep`); runs `cargo build --release` first.
# Without ../shared it prints a skip line and exits 0. Warm in-process figures:
# `cargo bench --bench search_scifact`.
#
# Usage: bash benches/rg_compare.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
shared="$root/../shared"
bundle="$shared/bundles/scifact"
corpus="$shared/corpora/scifact"
if [ ! -d "$bundle/pages" ] || [ ! -f "$corpus/queries.jsonl" ] || [ ! -f "$corpus/qrels/test.tsv" ]; then
    echo "rg_compare: skipped, ../shared/bundles/scifact or ../shared/corpora/scifact is absent"
    exit 0
fi
if ! command -v rg >/dev/null; then
    echo "rg_compare: ripgrep is missing; install it with: apt-get update && apt-get install -y ripgrep" >&2
    exit 2
fi
kbtools="$root/target/release/kbtools"
(cd "$root" && cargo build --release --quiet)

index=$(mktemp -d)
trap 'rm -rf "$index"' EXIT
start=$(date +%s%N)
"$kbtools" -q index "$bundle" --index "$index" >/dev/null
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "rg_compare: kbtools index built in ${elapsed_ms} ms; $(rg --version | sed -n 1p)"

python3 - "$corpus" "$bundle/pages" "$kbtools" "$index" <<'PY'
import json, re, statistics, subprocess, sys, time

corpus, pages, kbtools, index = sys.argv[1:5]
test_ids = set()
with open(f"{corpus}/qrels/test.tsv") as f:
    for n, line in enumerate(f):
        fields = line.rstrip("\n").split("\t")
        if n == 0 and not fields[2].strip().lstrip("-").isdigit():
            continue
        test_ids.add(fields[0])
queries = []
with open(f"{corpus}/queries.jsonl") as f:
    for line in f:
        q = json.loads(line)
        if str(q["_id"]) in test_ids:
            queries.append(q["text"])
assert len(queries) == 300, len(queries)

def terms(text):
    seen = []
    for word in re.findall(r"[^\W\d_]{3,}", text.lower()):
        if word not in seen:
            seen.append(word)
    return seen

def rg(text):
    args = ["rg", "-i", "-l"]
    for t in terms(text):
        args += ["-e", t]
    out = subprocess.run(args + [pages], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"rg failed: {out.stderr}")
    return len(out.stdout.splitlines())

def kb(text):
    request = json.dumps({"query": text, "mode": "hybrid"})
    out = subprocess.run([kbtools, "--index", index, "-q", "call", "search_files", request],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kbtools failed on {text!r}: {out.stdout}{out.stderr}")
    count = len(json.loads(out.stdout)["items"])
    assert count >= 1, f"no result for {text!r}"
    return count

def timed(fn):
    for q in queries:  # warm-up
        fn(q)
    times, counts = [], []
    for q in queries:
        t0 = time.perf_counter()
        counts.append(fn(q))
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    p99 = times[max(1, -(-99 * len(times) // 100)) - 1]
    return statistics.median(times), p99, statistics.median(counts)

assert all(terms(q) for q in queries)
for name, fn, what in [("rg -i -l (any term)", rg, "matched files"),
                       ("kbtools call search_files (hybrid)", kb, "results")]:
    median, p99, count = timed(fn)
    print(f"rg_compare: {name:36} 300 queries, cold process each: median {median:7.1f} ms, "
          f"p99 {p99:7.1f} ms, median {what} {count:g}")
PY
