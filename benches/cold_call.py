#!/usr/bin/env python3
"""Cold `kbtools call search_files` against the `sqlite3` CLI on FTS5, interleaved (issue 42).

One process per query for each tool, the tools alternating query by query, after one untimed
warm-up pass (page cache warm): (1) `kbtools --bundle B --index I call search_files
'{"query": Q, "mode": "file", "limit": 10}'` (the default bundle check included), for each binary
given; (2) `sqlite3 DB "SELECT path FROM t WHERE t MATCH '…' ORDER BY bm25(t) LIMIT 10"` on an
FTS5 table (path, title, body; unicode61) of the same pages, built by benches/compare.py's
script. Prints each tool's median wall time (ms) and the median of per-query ratios to sqlite3.

Usage: python3 benches/cold_call.py BUNDLE INDEX QUERIES.jsonl [--count 40] [--model-dir D]
                                    [--binary PATH ...]
INDEX must be built (`kbtools index BUNDLE --index INDEX`). --model-dir sets KBTOOLS_MODEL_DIR
(a `file`-mode call must not load the models: compare with and without).
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
sys.dont_write_bytecode = True  # importing compare.py leaves no __pycache__ in the tree

ap = argparse.ArgumentParser()
ap.add_argument("bundle")
ap.add_argument("index")
ap.add_argument("queries")
ap.add_argument("--count", type=int, default=40)
ap.add_argument("--model-dir")
ap.add_argument("--binary", action="append")
args = ap.parse_args()
binaries = args.binary or [os.path.join(ROOT, "target", "release", "kbtools")]

import compare  # noqa: E402  (FTS_BUILD, FTS_MATCH)
scope = {}
exec(compare.FTS_MATCH, scope)
match_expr = scope["match_expr"]

queries = [json.loads(l)["text"] for l in open(args.queries) if l.strip()][: args.count]
tmp = tempfile.mkdtemp()
db = os.path.join(tmp, "fts.db")
pages = os.path.join(args.bundle, "pages") if os.path.isdir(os.path.join(args.bundle, "pages")) else args.bundle
subprocess.run([sys.executable, "-c", compare.FTS_BUILD, pages, db], check=True)

env = dict(os.environ)
env.pop("KBTOOLS_BUNDLE", None)
env.pop("KBTOOLS_INDEX", None)
if args.model_dir:
    env["KBTOOLS_MODEL_DIR"] = args.model_dir

def run(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, env=env)
    took = (time.perf_counter() - start) * 1000
    if out.returncode != 0:
        sys.exit(f"failed: {cmd}\n{out.stderr.decode()}")
    return took

def commands(q):
    call = json.dumps({"query": q, "mode": "file", "limit": 10})
    sql = "SELECT path FROM t WHERE t MATCH '%s' ORDER BY bm25(t) LIMIT 10" % match_expr(q).replace("'", "''")
    cmds = [[b, "--bundle", args.bundle, "--index", args.index, "call", "search_files", call] for b in binaries]
    return cmds + [["sqlite3", db, sql]]

for q in queries:  # warm-up
    for c in commands(q):
        run(c)
times = [[] for _ in range(len(binaries) + 1)]
for q in queries:
    for i, c in enumerate(commands(q)):
        times[i].append(run(c))
sq = times[-1]
print(f"{len(queries)} queries, cold processes, ms (median; median ratio to sqlite3)")
for b, t in zip(binaries, times):
    ratio = statistics.median(x / y for x, y in zip(t, sq))
    print(f"  {b}: {statistics.median(t):.1f} ms  ({ratio:.2f}x)")
print(f"  sqlite3 CLI: {statistics.median(sq):.1f} ms")
