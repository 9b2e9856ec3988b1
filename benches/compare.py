#!/usr/bin/env python3
"""Whole-process comparison of kbtools with the technology most peer tools use (SQLite FTS5, via
Python's sqlite3) and with plain `rg -i -l`, on the same `pages/**/*.md` files in one run.

  build   (1) `kbtools index BUNDLE --index <fresh dir>`, (2) a python3 script that creates an FTS5
          table (path UNINDEXED, title, body; default unicode61 tokenizer) and inserts every page
          (frontmatter stripped, title from it or from the first `# ` heading) in one transaction.
          Wall time of the whole process (python startup included, like kbtools) and peak RSS
          (/usr/bin/time -f "%e %M"); --builds rounds, alternating the two; medians. On-disk size
          of the index folder and of the .db file beside the pages' bytes. With --fts-trigram,
          (2') the same script with FTS5's trigram tokenizer each round as well (build only):
          unicode61 makes one token of a whole run of CJK characters, so its index cannot find a
          Chinese word inside a sentence; trigram can (three characters or more), kbtools's
          character and bigram analysis can, and the row shows what that costs FTS5.
  query   one cold process per query: (3) `kbtools --index DIR --no-refresh call search_files
          '{"query": Q, "mode": "file", "limit": 10}'` (the index as built; also timed without
          --no-refresh, which first checks the bundle's stat fingerprint), (4) `python3 -c` connecting to the db and
          running `SELECT path FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10` with Q turned
          into an OR of quoted tokens, (5) `rg -i -l -e 'term1|term2|…' pages/` (Q's tokens of
          3+ characters, regex-escaped; unranked, every file holding any term). One untimed
          warm-up pass of all three (page cache warm), then one timed pass, the three tools
          interleaved query by query; median and p90 (nearest rank) in ms. Also the warm
          in-process FTS5 figure: one python3 process running every query (after a warm-up pass).

Usage: bash benches/compare.sh [BUNDLE | --generate N] [--queries Q.jsonl] [--queries-count 50]
                               [--builds 3] [--fts-trigram]
BUNDLE defaults to ../shared/bundles/scifact (skipped with a message when absent). --generate N
writes N synthetic pages into target/bench-bundles/gen-N (seed 1) with the release binary, or
reuses that folder. Queries: --queries, else BUNDLE/.bench-queries.jsonl, else (for scifact)
../shared/corpora/scifact/queries.jsonl, else page titles taken evenly from the pages.
compare.sh installs ripgrep and /usr/bin/time when missing; this script builds the release binary.
"""
import argparse, json, os, platform, re, shutil, sqlite3, statistics, subprocess, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SHARED = os.path.join(ROOT, "..", "shared")
KBTOOLS = os.path.join(ROOT, "target", "release", "kbtools")
GEN_SEED = 1

FTS_BUILD = r'''
import os, sqlite3, sys
pages, db = sys.argv[1:3]
options = "".join(", tokenize='%s'" % t for t in sys.argv[3:])
def split(text, name):
    title = None
    if text.startswith("---\n"):
        end = text.find("\n---", 3)
        if end != -1:
            for line in text[4:end].splitlines():
                if line.startswith("title:"):
                    title = line[6:].strip().strip("\"'")
            nl = text.find("\n", end + 4)
            text = text[nl + 1:] if nl != -1 else ""
    if not title:
        for line in text.splitlines():
            if line.startswith("# "):
                title = line[2:].strip()
                break
    return title or name, text
def rows():
    for d, dirs, files in os.walk(pages):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        for f in sorted(files):
            if f.endswith(".md") and not f.startswith("."):
                p = os.path.join(d, f)
                with open(p, encoding="utf-8", errors="replace") as fh:
                    title, body = split(fh.read(), f[:-3])
                yield "pages/" + os.path.relpath(p, pages), title, body
con = sqlite3.connect(db)
con.execute("CREATE VIRTUAL TABLE t USING fts5(path UNINDEXED, title, body%s)" % options)
with con:  # one transaction
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows())
con.close()
'''

# Query text -> FTS5 MATCH expression: the query's tokens (unicode61 splits on everything but
# letters and digits), lowercased, deduplicated, each quoted, joined with OR.
FTS_MATCH = r'''
import re
def match_expr(q):
    toks = list(dict.fromkeys(t.lower() for t in re.findall(r"[^\W_]+", q)))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in toks)
'''

FTS_QUERY = FTS_MATCH + r'''
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = con.execute("SELECT path FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10",
                   (match_expr(sys.argv[2]),)).fetchall()
print("\n".join(r[0] for r in rows))
'''

FTS_WARM = FTS_MATCH + r'''
import json, sqlite3, sys, time
con = sqlite3.connect(sys.argv[1])
queries = json.load(open(sys.argv[2]))
sql = "SELECT path FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"
for q in queries:  # warm-up pass
    con.execute(sql, (match_expr(q),)).fetchall()
times, hits = [], []
for q in queries:
    t0 = time.perf_counter()
    rows = con.execute(sql, (match_expr(q),)).fetchall()
    times.append((time.perf_counter() - t0) * 1000)
    hits.append(len(rows))
print(json.dumps({"times": times, "hits": hits}))
'''


def fail(msg):
    sys.exit(f"compare: {msg}")


def tokens(q):
    return list(dict.fromkeys(t.lower() for t in re.findall(r"[^\W_]+", q)))


def rg_pattern(q):
    toks = tokens(q)
    terms = [t for t in toks if len(t) >= 3] or toks
    # escape every character the regex syntax of ripgrep treats as meta
    return "|".join(re.sub(r"([\\.+*?()|\[\]{}^$#&\-~])", r"\\\1", t) for t in terms)


def bench_queries(bundle, given, pages, count, title_of):
    """The benchmark's queries for `bundle` and where they come from: the BEIR queries file
    `given`, else BUNDLE/.bench-queries.jsonl, else SciFact's corpus queries for the scifact
    bundle, else `count` page titles (`title_of` of pages taken evenly)."""
    qfile = given
    if not qfile:
        for cand in [os.path.join(bundle, ".bench-queries.jsonl"),
                     os.path.join(SHARED, "corpora", "scifact", "queries.jsonl")
                     if os.path.basename(bundle.rstrip("/")) == "scifact" else None]:
            if cand and os.path.isfile(cand):
                qfile = cand
                break
    if not qfile:
        step = max(1, len(pages) // count)
        return [title_of(p) for p in pages[::step]], "page titles"
    with open(qfile, encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for line in f if line.strip()]
    return queries, os.path.relpath(os.path.abspath(qfile), ROOT)


def p90(values):
    s = sorted(values)
    return s[max(1, -(-9 * len(s) // 10)) - 1]


def tree_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for d, _, files in os.walk(path):
        total += sum(os.lstat(os.path.join(d, f)).st_size for f in files)
    return total


def page_files(pages):
    out = []
    for d, dirs, files in os.walk(pages):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".md") and not f.startswith(".")]
    return out


def timed(cmd):
    """Whole-process wall time (perf_counter around /usr/bin/time, ms resolution) and peak RSS."""
    t0 = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        fail(f"failed: {' '.join(cmd)}\n{out.stderr}")
    rss_kib = int(out.stderr.strip().splitlines()[-1].split()[1])
    return wall, rss_kib


def run_ms(cmd, ok=(0,)):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    ms = (time.perf_counter() - t0) * 1000
    if out.returncode not in ok:
        fail(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    return ms, out.stdout


def title_of(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read(4096)
    for line in text.splitlines():
        if line.startswith("title:"):
            return line[6:].strip().strip("\"'")
        if line.startswith("# "):
            return line[2:].strip()
    return " ".join(re.sub(r"^---.*?---", "", text, flags=re.S).split()[:6])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", nargs="?", help="bundle folder (default ../shared/bundles/scifact)")
    ap.add_argument("--generate", type=int, metavar="N",
                    help=f"use target/bench-bundles/gen-N (generated with seed {GEN_SEED} if absent)")
    ap.add_argument("--queries", help="queries .jsonl (one {\"text\": …} per line)")
    ap.add_argument("--queries-count", type=int, default=50)
    ap.add_argument("--builds", type=int, default=3)
    ap.add_argument("--fts-trigram", action="store_true",
                    help="also time an FTS5 build with the trigram tokenizer (the FTS5 tokenizer "
                         "that finds Chinese text inside a run; unicode61 takes a whole run of "
                         "CJK characters as one token)")
    args = ap.parse_args()
    if args.bundle and args.generate:
        fail("give a BUNDLE or --generate N, not both")
    if args.builds < 1 or args.queries_count < 1:
        fail("--builds and --queries-count must be at least 1")

    if not args.generate:
        bundle = os.path.abspath(args.bundle or os.path.join(SHARED, "bundles", "scifact"))
        if not os.path.isdir(os.path.join(bundle, "pages")):
            if args.bundle:
                fail(f"{bundle} has no pages/ folder")
            print(f"compare: skipped, {os.path.normpath(bundle)} is absent")
            return

    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    if args.generate:
        bundle = os.path.join(ROOT, "target", "bench-bundles", f"gen-{args.generate}")
        if os.path.isdir(os.path.join(bundle, "pages")) and os.path.isfile(os.path.join(bundle, ".bench-queries.jsonl")):
            print(f"compare: reusing {os.path.relpath(bundle, ROOT)}")
        else:
            os.makedirs(os.path.dirname(bundle), exist_ok=True)
            force = ["--force"] if os.path.isdir(bundle) and os.listdir(bundle) else []
            t0 = time.perf_counter()
            subprocess.run([KBTOOLS, "-q", "gen-bundle", bundle, "--pages", str(args.generate),
                            "--seed", str(GEN_SEED)] + force, check=True, stdout=subprocess.DEVNULL)
            print(f"compare: generated {os.path.relpath(bundle, ROOT)} (seed {GEN_SEED}) "
                  f"in {time.perf_counter() - t0:.1f} s")
    pages_dir = os.path.join(bundle, "pages")
    pages = page_files(pages_dir)
    if not pages:
        fail(f"no pages/**/*.md under {bundle}")
    pages_bytes = sum(os.path.getsize(p) for p in pages)

    # queries
    queries, source = bench_queries(bundle, args.queries, pages, args.queries_count, title_of)
    clean = lambda q: re.sub(r"[\x00-\x1f\x7f]", " ", q).strip()[:500]
    queries = [q for q in map(clean, queries) if tokens(q)][: args.queries_count]
    if not queries:
        fail("no usable query")

    work = tempfile.mkdtemp(prefix="kbtools-compare-")
    try:
        run(args, bundle, pages_dir, pages, pages_bytes, queries, source, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, bundle, pages_dir, pages, pages_bytes, queries, source, work):
    version = subprocess.run([KBTOOLS, "--version"], capture_output=True, text=True).stdout.strip()
    rgv = subprocess.run(["rg", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"compare: {os.path.normpath(bundle)}: {len(pages):,} pages, {pages_bytes:,} bytes of "
          f"Markdown; {len(queries)} queries from {source}; {args.builds} builds")
    print(f"compare: {version}; SQLite {sqlite3.sqlite_version} (Python {platform.python_version()}); "
          f"{rgv}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    build_py = os.path.join(work, "fts_build.py")
    with open(build_py, "w") as f:
        f.write(FTS_BUILD)
    for p in pages:  # page cache warm for every builder
        with open(p, "rb") as f:
            f.read()

    kb = {"wall": [], "rss": []}
    fts = {"wall": [], "rss": []}
    tri = {"wall": [], "rss": [], "size": []}
    kb_index = fts_db = None
    for i in range(args.builds):
        for d in (kb_index, os.path.dirname(fts_db) if fts_db else None):
            if d:
                shutil.rmtree(d, ignore_errors=True)
        kb_index = tempfile.mkdtemp(dir=work, prefix="kbindex-")
        w, r = timed([KBTOOLS, "-q", "index", bundle, "--index", kb_index])
        kb["wall"].append(w); kb["rss"].append(r)
        fts_db = os.path.join(tempfile.mkdtemp(dir=work, prefix="fts-"), "fts.db")
        w, r = timed([sys.executable, build_py, pages_dir, fts_db])
        fts["wall"].append(w); fts["rss"].append(r)
        if args.fts_trigram:
            tri_dir = tempfile.mkdtemp(dir=work, prefix="fts-trigram-")
            tri_db = os.path.join(tri_dir, "fts.db")
            w, r = timed([sys.executable, build_py, pages_dir, tri_db, "trigram"])
            tri["wall"].append(w); tri["rss"].append(r); tri["size"].append(tree_bytes(tri_db))
            shutil.rmtree(tri_dir, ignore_errors=True)
    kb_size, fts_size = tree_bytes(kb_index), tree_bytes(fts_db)
    fts_rows = sqlite3.connect(fts_db).execute("SELECT count(*) FROM t").fetchone()[0]
    if fts_rows != len(pages):
        fail(f"FTS5 table holds {fts_rows} rows, expected {len(pages)}")

    def kb_query(q, refresh=False):
        req = json.dumps({"query": q, "mode": "file", "limit": 10}, ensure_ascii=False)
        flags = [] if refresh else ["--no-refresh"]
        ms, out = run_ms([KBTOOLS, "--index", kb_index, "-q", *flags, "call", "search_files", req])
        return ms, len(json.loads(out)["items"])

    def kb_query_checked(q):
        return kb_query(q, refresh=True)

    def fts_query(q):
        ms, out = run_ms([sys.executable, "-c", FTS_QUERY, fts_db, q])
        return ms, len(out.splitlines())

    def rg_query(q):
        ms, out = run_ms(["rg", "-i", "-l", "-e", rg_pattern(q), pages_dir], ok=(0, 1))
        return ms, len(out.splitlines())

    tools = [("kbtools call search_files (cold)", kb_query),
             ("FTS5 query, python3 -c (cold)", fts_query),
             ("rg -i -l, any term (cold)", rg_query),
             ("  kbtools, bundle checked first", kb_query_checked)]
    for q in queries:  # warm-up pass
        for _, fn in tools:
            fn(q)
    results = {name: ([], []) for name, _ in tools}
    for q in queries:
        for name, fn in tools:
            ms, hits = fn(q)
            results[name][0].append(ms); results[name][1].append(hits)
    qjson = os.path.join(work, "queries.json")
    with open(qjson, "w") as f:
        json.dump(queries, f)
    warm = json.loads(subprocess.run([sys.executable, "-c", FTS_WARM, fts_db, qjson],
                                     capture_output=True, text=True, check=True).stdout)
    results["FTS5 query, in-process (warm)"] = (warm["times"], warm["hits"])

    med = statistics.median
    print()
    print(f"{'build (whole process)':34} {'median s':>9} {'peak RSS':>9} {'size bytes':>14} {'size/pages':>10}")
    for name, b, size in [("kbtools index", kb, kb_size), ("SQLite FTS5 build, python3", fts, fts_size)]:
        print(f"{name:34} {med(b['wall']):9.3f} {med(b['rss']) / 1024:5.0f} MiB {size:14,} "
              f"{size / pages_bytes:9.2f}x")
    print(f"{'  ratio FTS5/kbtools':34} {med(fts['wall']) / med(kb['wall']):8.2f}x "
          f"{med(fts['rss']) / med(kb['rss']):8.2f}x {fts_size / kb_size:13.2f}x")
    if tri["wall"]:
        size = tri["size"][-1]
        print(f"{'SQLite FTS5 build, trigram':34} {med(tri['wall']):9.3f} "
              f"{med(tri['rss']) / 1024:5.0f} MiB {size:14,} {size / pages_bytes:9.2f}x")
        print(f"{'  ratio FTS5 trigram/kbtools':34} {med(tri['wall']) / med(kb['wall']):8.2f}x "
              f"{med(tri['rss']) / med(kb['rss']):8.2f}x {size / kb_size:13.2f}x")
    print(f"{'  (pages)':34} {'':9} {'':9} {pages_bytes:14,}")
    print()
    print(f"{'query (' + str(len(queries)) + ' queries)':34} {'median ms':>9} {'p90 ms':>9} {'median hits':>12}")
    for name, (times, hits) in results.items():
        print(f"{name:34} {med(times):9.2f} {p90(times):9.2f} {med(hits):12g}")
    kbm = med(results[tools[0][0]][0])
    print(f"{'  ratio FTS5 cold/kbtools cold':34} {med(results[tools[1][0]][0]) / kbm:8.2f}x "
          f"{p90(results[tools[1][0]][0]) / p90(results[tools[0][0]][0]):8.2f}x")
    print(f"{'  ratio rg/kbtools cold':34} {med(results[tools[2][0]][0]) / kbm:8.2f}x "
          f"{p90(results[tools[2][0]][0]) / p90(results[tools[0][0]][0]):8.2f}x")
    checked = results[tools[3][0]][0]
    print(f"{'  ratio rg/kbtools checked':34} {med(results[tools[2][0]][0]) / med(checked):8.2f}x "
          f"{p90(results[tools[2][0]][0]) / p90(checked):8.2f}x")
    print()
    print(f"compare: load average {os.getloadavg()[0]:.2f} at end; build wall times "
          f"kbtools {', '.join(f'{w:.3f}' for w in kb['wall'])} s, FTS5 "
          f"{', '.join(f'{w:.3f}' for w in fts['wall'])} s"
          + (f", FTS5 trigram {', '.join(f'{w:.3f}' for w in tri['wall'])} s" if tri["wall"] else ""))


if __name__ == "__main__":
    main()
