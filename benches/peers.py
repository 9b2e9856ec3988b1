#!/usr/bin/env python3
"""kbtools against its peers on the same pages: SQLite FTS5, tantivy-py and bm25s, interleaved.

Run through benches/peers.sh, which installs the pinned peers (tantivy==0.27.0, bm25s==0.3.16,
numpy==2.4.6) in target/bench-venv and runs this script with that venv's python.

The pages. Every `pages/**/*.md` of the bundle (dot-names skipped, paths in sorted order). The peer
scripts read the files themselves, as kbtools does, so reading is part of every build: frontmatter
(a first line `---` up to the next `---` or `...` line) is stripped, the title is its `title:`,
else the first `# ` heading, else the file's stem; the body is the rest. Before the first round
every page is read once, so every tool starts with the page cache warm, and each peer's imports
run once (untimed) for the same reason.

Rounds. Each section runs --rounds rounds; round r runs every tool once, the tools' order rotated
by one per round, so drift of the machine (other load, frequency) falls on all of them alike.
A ratio is kbtools / peer: above 1 kbtools is slower (or larger). The table gives, per figure,
the median over rounds of that figure, and in parentheses the median of the per-round ratios
(not the ratio of the medians).

build   One process per tool and round, into a fresh folder; measured by this script with
        subprocess.Popen and os.wait4 on the child: wall time (time.perf_counter from before the
        spawn to the reaping, so interpreter start and imports count for the peers, like process
        start for kbtools), CPU time (ru_utime + ru_stime of the child, all its threads), peak RSS
        (ru_maxrss), and the size on disk of what the build left (the last round's; they keep
        different things: FTS5 a copy of every title and body besides its index, tantivy the
        postings with positions and the paths, bm25s a sparse score matrix and its vocabulary,
        kbtools its search index, catalog, graph and passages).
          kbtools  `kbtools -q index BUNDLE --index DIR`, KBTOOLS_MODEL_DIR an empty folder, so no
                   embedding model runs (lexical index, graph, catalog; the writer threads that
                   kbtools picks from the machine);
          FTS5     python3 + sqlite3: `CREATE VIRTUAL TABLE page USING fts5(path UNINDEXED, title,
                   body, tokenize='unicode61')`, every page inserted in one transaction;
          tantivy  tantivy-py: schema path (raw, stored), title and body (en_stem, English
                   stemming like kbtools), `index.writer(heap_size=128 MB, num_threads=2)`, one
                   document per page, commit, wait_merging_threads;
          bm25s    bm25s.tokenize(title + body, stopwords="en") (its scikit-learn-like pattern,
                   lower-cased, English stopwords, no stemmer), BM25().index, save to the folder
                   (plus the page paths as paths.json).
        Each peer must report one document per page; kbtools reports its source pages (a
        bundle's generated navigation pages, `type: navigation`, are indexed apart, and the
        script says how many files that leaves out of the count).
query   Warm search, each tool on the last round's build. kbtools: `kbtools -q --index DIR
        --no-refresh serve BUNDLE --addr 127.0.0.1:PORT` (KBTOOLS_MODEL_DIR empty: the hybrid
        mode fuses the lexical and graph lanes, no semantic lane), started for the tool's turn
        in the round and stopped after it; once GET /openapi/v2/health answers 200, each query is
        `GET /openapi/v2/knowledge-bases/{id}/files/search?query=Q&mode=MODE&limit=10` (the
        route takes its parameters in the query string) over ONE kept-alive
        http.client.HTTPConnection, timed client-side with time.perf_counter from sending the
        request to having read the whole response body (JSON decoding after the clock stops;
        every answer must be 200). Peers: one python process per tool and round, opening the
        index once and timing each call in-process (time.perf_counter), the top 10 page paths
        fetched as part of the call (kbtools answers the whole search_files contract: ten items
        with excerpts, frontmatter and graph context, about 100 KB of JSON on a generated bundle).
        One tool runs at a time (the server is stopped before a peer's process starts):
          FTS5     `SELECT path FROM page WHERE page MATCH ? ORDER BY bm25(page) LIMIT 10`, the
                   query's words (runs of letters and digits, lower-cased, each once) quoted and
                   joined with OR;
          tantivy  the same words, each quoted ("word": no query syntax character can remain,
                   so parsing never fails and AND/OR/NOT are plain words), joined with spaces
                   (OR, the parser's default), index.parse_query(text, ["title", "body"]),
                   searcher.search(query, 10), each hit's stored path;
          bm25s    bm25s.tokenize([Q], stopwords="en") and retrieve(k=10) on the saved index
                   (loaded once), the hits with a score above 0.
        Every tool runs one untimed warm-up pass over all queries, then --passes timed passes.
        p50 and p99 (nearest rank) of the round's times; the hits column is the median number
        of results per query, a check that every tool searched the same text. After its timed
        passes kbtools's server also answers GET /openapi/v2/health once per query on the same
        connection: the p50 of those is printed as the HTTP round trip alone (the peers pay no
        such hop), with the size of the last search answer.
semantic (only with --model-dir; skipped without it unless --only names it, then an error)
        What the semantic lane costs a warm hybrid query: an index built with
        `kbtools index --semantic` (KBTOOLS_MODEL_DIR = --model-dir; untimed), served by two
        servers at once on that index, `lane on` with KBTOOLS_MODEL_DIR = --model-dir and
        `lane off` with an empty one (hybrid without the semantic lane). A server caches query
        embeddings, so per round both servers are started afresh, warmed up on the first
        --semantic-warmup questions, then sent every other question once (mode hybrid, one
        kept-alive connection each), the two servers alternating which answers a question
        first. Lane on must report semanticStatus ready on every answer, lane off must not.
        p50 each and the median of per-round ratios on/off.

Queries: --queries (BEIR jsonl, {"_id", "text"}), else BUNDLE/.bench-queries.jsonl, else, for a
bundle named scifact, ../shared/corpora/scifact/queries.jsonl, else page titles taken evenly;
control characters become spaces, at most 500 characters, queries without a word dropped, the
first --queries-count kept.

Usage: bash benches/peers.sh [BUNDLE | --generate N] [--queries Q.jsonl] [--queries-count 200]
                             [--rounds 3] [--passes 1] [--only build,query,semantic]
                             [--mode hybrid] [--model-dir DIR] [--semantic-warmup 10]
                             [--binary PATH] [--json OUT]
BUNDLE defaults to ../shared/bundles/scifact; --generate N writes target/bench-bundles/gen-N
with `kbtools gen-bundle --pages N --seed 1` (reused when present). --binary defaults to
target/release/kbtools (peers.sh builds it unless --binary is given). --json writes every figure
and every round's raw values.
"""
import argparse, http.client, importlib.metadata, json, os, platform, re, shutil, signal, socket
import sqlite3, statistics, subprocess, sys, tempfile, time, urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compare.py, beside it

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SHARED = os.path.join(ROOT, "..", "shared")
GEN_SEED = 1
TANTIVY_HEAP = 128_000_000
TANTIVY_THREADS = 2
TOOLS = ["kbtools", "fts5", "tantivy", "bm25s"]
PEERS = TOOLS[1:]

# The pages as every peer reads them: (path from the bundle, title, body), in path order.
PAGES = r'''
import os

def split_page(text, stem):
    lines = text.split("\n")
    title = None
    if lines and lines[0].rstrip("\r") == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                for line in lines[1:end]:
                    if line.startswith("title:"):
                        title = line[6:].strip().strip("\"'") or None
                lines = lines[end + 1:]
                break
    if title is None:
        for line in lines:
            if line.startswith("# "):
                title = line[2:].strip()
                break
    return title or stem, "\n".join(lines)

def pages(pages_dir):
    for folder, dirs, files in os.walk(pages_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".md") and not name.startswith("."):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    title, body = split_page(f.read(), name[:-3])
                yield "pages/" + os.path.relpath(path, pages_dir).replace(os.sep, "/"), title, body
'''

# A query's words: runs of letters and digits, lower-cased, each once, in order.
WORDS = r'''
import re

def words(query):
    return list(dict.fromkeys(w.lower() for w in re.findall(r"[^\W_]+", query)))
'''

BUILD = {
    "fts5": PAGES + r'''
import json, sqlite3, sys
con = sqlite3.connect(os.path.join(sys.argv[2], "fts.db"))
con.execute("CREATE VIRTUAL TABLE page USING fts5(path UNINDEXED, title, body, tokenize='unicode61')")
with con:  # one transaction
    con.executemany("INSERT INTO page VALUES (?, ?, ?)", pages(sys.argv[1]))
docs = con.execute("SELECT count(*) FROM page").fetchone()[0]
con.close()
print(json.dumps({"docs": docs}))
''',
    "tantivy": PAGES + r'''
import json, sys, tantivy
schema = tantivy.SchemaBuilder()
schema.add_text_field("path", stored=True, tokenizer_name="raw")
schema.add_text_field("title", tokenizer_name="en_stem")
schema.add_text_field("body", tokenizer_name="en_stem")
index = tantivy.Index(schema.build(), path=sys.argv[2])
writer = index.writer(heap_size=int(sys.argv[3]), num_threads=int(sys.argv[4]))
docs = 0
for path, title, body in pages(sys.argv[1]):
    writer.add_document(tantivy.Document(path=path, title=title, body=body))
    docs += 1
writer.commit()
writer.wait_merging_threads()
print(json.dumps({"docs": docs}))
''',
    "bm25s": PAGES + r'''
import bm25s, json, sys
paths, texts = [], []
for path, title, body in pages(sys.argv[1]):
    paths.append(path)
    texts.append(title + "\n" + body)
tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
model = bm25s.BM25()
model.index(tokens, show_progress=False)
model.save(sys.argv[2], show_progress=False)
with open(os.path.join(sys.argv[2], "paths.json"), "w") as f:
    json.dump(paths, f)
print(json.dumps({"docs": len(paths)}))
''',
}

# argv: INDEX QUERIES.json PASSES; prints {"times": [ms...], "hits": [n...]} of the timed passes.
QUERY_LOOP = r'''
import json, sys, time

def run(search):
    with open(sys.argv[2], encoding="utf-8") as f:
        queries = json.load(f)
    for q in queries:  # warm-up pass
        search(q)
    times, hits = [], []
    for _ in range(int(sys.argv[3])):
        for q in queries:
            t0 = time.perf_counter()
            found = search(q)
            times.append((time.perf_counter() - t0) * 1000)
            hits.append(len(found))
    print(json.dumps({"times": times, "hits": hits}))
'''

QUERY = {
    "fts5": WORDS + QUERY_LOOP + r'''
import os, sqlite3
con = sqlite3.connect(os.path.join(sys.argv[1], "fts.db"))
SQL = "SELECT path FROM page WHERE page MATCH ? ORDER BY bm25(page) LIMIT 10"

def search(q):
    expr = " OR ".join('"%s"' % w.replace('"', '""') for w in words(q))
    return [row[0] for row in con.execute(SQL, (expr,))]

run(search)
''',
    "tantivy": WORDS + QUERY_LOOP + r'''
import tantivy
index = tantivy.Index.open(sys.argv[1])
searcher = index.searcher()

def search(q):
    # words hold letters and digits only, so quoting each leaves no query syntax
    query = index.parse_query(" ".join('"%s"' % w for w in words(q)), ["title", "body"])
    return [searcher.doc(address)["path"][0] for _, address in searcher.search(query, 10).hits]

run(search)
''',
    "bm25s": QUERY_LOOP + r'''
import bm25s, os
model = bm25s.BM25.load(sys.argv[1])
with open(os.path.join(sys.argv[1], "paths.json"), encoding="utf-8") as f:
    paths = json.load(f)
k = min(10, len(paths))

def search(q):
    tokens = bm25s.tokenize([q], stopwords="en", return_ids=False, show_progress=False)
    docs, scores = model.retrieve(tokens, k=k, show_progress=False)
    return [paths[d] for d, s in zip(docs[0], scores[0]) if s > 0]

run(search)
''',
}

LABELS = {"kbtools": "kbtools", "fts5": "FTS5 unicode61",
          "tantivy": f"tantivy-py {{tantivy}}, {TANTIVY_THREADS} threads", "bm25s": "bm25s {bm25s}"}


def fail(msg):
    sys.exit(f"peers: {msg}")


def median(values):
    return statistics.median(values)


def nearest_rank(values, pct):
    s = sorted(values)
    return s[max(1, -(-pct * len(s) // 100)) - 1]


def rotated(tools, r):
    return tools[r % len(tools):] + tools[:r % len(tools)]


from compare import bench_queries, page_files, tree_bytes  # noqa: E402  (the same pages, sizes, queries)


_here = {}
exec(PAGES + WORDS, _here)  # the peers' own page reading and query words, for this script too


def title_of(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return _here["split_page"](f.read(), os.path.basename(path)[:-3])[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measured(cmd, env, log):
    """Runs cmd to its end: (wall s, CPU s, peak RSS KiB, stdout), from os.wait4's rusage."""
    with open(log + ".out", "w+b") as out, open(log + ".err", "w+b") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0); err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        fail(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, stdout


class Server:
    """`kbtools serve` on a built index, on a free loopback port; stop() ends it (SIGTERM, then KILL)."""
    running = []

    def __init__(self, binary, bundle, index, env, log):
        self.port = free_port()
        self.log = open(log, "wb")
        self.proc = subprocess.Popen([binary, "-q", "--index", index, "--no-refresh", "serve", bundle,
                                      "--addr", f"127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        Server.running.append(self)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                fail(f"kbtools serve exited with {self.proc.returncode}:\n{open(log).read()}")
            try:
                if self.get("/openapi/v2/health")[0] == 200:
                    break
            except OSError:
                self.conn.close()
            if time.monotonic() > deadline:
                fail(f"kbtools serve did not answer health in 120 s:\n{open(log).read()}")
            time.sleep(0.05)
        kbs = json.loads(self.get("/openapi/v2/knowledge-bases")[1])["items"]
        self.base = "/openapi/v2/knowledge-bases/" + urllib.parse.quote(kbs[0]["knowledgeBaseId"], safe="")
        self.sock = self.conn.sock

    def get(self, target):
        self.conn.request("GET", target)
        response = self.conn.getresponse()
        return response.status, response.read()

    def search(self, query, mode):
        """(ms, answer): the whole request and response body on the kept-alive connection."""
        target = self.base + "/files/search?" + urllib.parse.urlencode({"query": query, "mode": mode, "limit": 10})
        t0 = time.perf_counter()
        status, body = self.get(target)
        ms = (time.perf_counter() - t0) * 1000
        if self.conn.sock is not self.sock:
            fail("kbtools serve did not keep the connection alive")
        if status != 200:
            fail(f"search answered {status}: {body[:500]!r}")
        self.last_bytes = len(body)
        return ms, json.loads(body)

    def stop(self):
        self.conn.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if self in Server.running:
            Server.running.remove(self)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", nargs="?", help="bundle folder (default ../shared/bundles/scifact)")
    ap.add_argument("--generate", type=int, metavar="N",
                    help=f"use target/bench-bundles/gen-N (kbtools gen-bundle, seed {GEN_SEED}, when absent)")
    ap.add_argument("--queries", help="BEIR queries .jsonl ({\"_id\", \"text\"} a line)")
    ap.add_argument("--queries-count", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", type=int, default=1, help="timed passes over the queries per round")
    ap.add_argument("--only", default="build,query,semantic", help="sections to run, comma-separated")
    ap.add_argument("--mode", default="hybrid", choices=["hybrid", "file", "graph"], help="kbtools search mode")
    ap.add_argument("--model-dir", help="installed embedding models: turns the semantic section on")
    ap.add_argument("--semantic-warmup", type=int, default=10, help="questions that only warm the servers up")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "kbtools"))
    ap.add_argument("--json", metavar="OUT", help="write every figure and raw value as JSON")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    if only - {"build", "query", "semantic"}:
        fail(f"unknown section in --only: {', '.join(sorted(only - {'build', 'query', 'semantic'}))}")
    if args.bundle and args.generate:
        fail("give a BUNDLE or --generate N, not both")
    if args.rounds < 1 or args.passes < 1 or args.queries_count < 1:
        fail("--rounds, --passes and --queries-count must be at least 1")
    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        fail(f"no kbtools binary at {binary} (cargo build --release, or --binary PATH)")
    if "semantic" in only and not args.model_dir:
        if args.only != ap.get_default("only"):
            fail("the semantic section needs --model-dir DIR")
        only.discard("semantic")
    versions = {}
    for package in ("tantivy", "bm25s", "numpy"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            fail(f"{package} is not installed for {sys.executable}: run benches/peers.sh")

    if args.generate:
        bundle = os.path.join(ROOT, "target", "bench-bundles", f"gen-{args.generate}")
        if os.path.isfile(os.path.join(bundle, ".bench-queries.jsonl")):
            print(f"peers: reusing {os.path.relpath(bundle, ROOT)}")
        else:
            os.makedirs(os.path.dirname(bundle), exist_ok=True)
            force = ["--force"] if os.path.isdir(bundle) and os.listdir(bundle) else []
            subprocess.run([binary, "-q", "gen-bundle", bundle, "--pages", str(args.generate),
                            "--seed", str(GEN_SEED)] + force, check=True, stdout=subprocess.DEVNULL)
            print(f"peers: generated {os.path.relpath(bundle, ROOT)} (seed {GEN_SEED})")
    else:
        bundle = os.path.abspath(args.bundle or os.path.join(SHARED, "bundles", "scifact"))
    pages_dir = os.path.join(bundle, "pages")
    pages = page_files(pages_dir)
    if not pages:
        fail(f"no pages/**/*.md under {bundle}")

    queries, source = bench_queries(bundle, args.queries, pages, args.queries_count, title_of)
    clean = (re.sub(r"[\x00-\x1f\x7f]", " ", q).strip()[:500] for q in queries)
    queries = [q for q in clean if _here["words"](q)][: args.queries_count]
    if not queries:
        fail("no usable query")
    if "semantic" in only and len(queries) <= args.semantic_warmup:
        fail(f"the semantic section needs more than --semantic-warmup ({args.semantic_warmup}) queries")

    env = {k: v for k, v in os.environ.items() if not k.startswith("KBTOOLS_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    work = tempfile.mkdtemp(prefix="kbtools-peers-")
    stop = lambda *_: sys.exit(143)
    signal.signal(signal.SIGTERM, stop)
    try:
        empty_models = os.path.join(work, "no-models")
        os.mkdir(empty_models)
        env["KBTOOLS_MODEL_DIR"] = empty_models
        report = run(args, only, binary, bundle, pages_dir, pages, queries, source, versions, env, work)
    finally:
        for server in list(Server.running):
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"peers: wrote {args.json}")


def run(args, only, binary, bundle, pages_dir, pages, queries, source, versions, env, work):
    kb_version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    labels = {t: LABELS[t].format(**versions) for t in TOOLS}
    pages_bytes = sum(os.path.getsize(p) for p in pages)
    machine = {"cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
               "loadavg_start": os.getloadavg(), "platform": platform.platform()}
    print(f"peers: {os.path.normpath(bundle)}: {len(pages):,} pages, {pages_bytes:,} bytes of Markdown; "
          f"{len(queries)} queries from {source}; {args.rounds} round{'s' if args.rounds != 1 else ''}")
    print(f"peers: {kb_version} ({binary}); SQLite {sqlite3.sqlite_version}, Python {platform.python_version()}, "
          f"tantivy-py {versions['tantivy']}, bm25s {versions['bm25s']}, numpy {versions['numpy']}")
    print(f"peers: {platform.platform()}; nproc {machine['usable_cpus']} ({machine['cpus']} CPUs), "
          "load average " + " ".join(f"{x:.2f}" for x in machine["loadavg_start"]) + " at start")
    report = {"bundle": os.path.normpath(bundle), "pages": len(pages), "pages_bytes": pages_bytes,
              "queries": len(queries), "queries_source": source, "rounds": args.rounds,
              "passes": args.passes, "mode": args.mode, "kbtools": kb_version, "binary": binary,
              "versions": dict(versions, sqlite=sqlite3.sqlite_version, python=platform.python_version()),
              "machine": machine}

    scripts = {}
    for kind, table in (("build", BUILD), ("query", QUERY)):
        for tool, code in table.items():
            scripts[kind, tool] = os.path.join(work, f"{kind}_{tool}.py")
            with open(scripts[kind, tool], "w") as f:
                f.write(code)
    qjson = os.path.join(work, "queries.json")
    with open(qjson, "w") as f:
        json.dump(queries, f)
    for p in pages:  # page cache warm for every tool
        with open(p, "rb") as f:
            f.read()
    subprocess.run([sys.executable, "-c", "import sqlite3, tantivy, bm25s"], check=True, env=env)
    subprocess.run([binary, "--version"], check=True, stdout=subprocess.DEVNULL)

    def build_cmd(tool, out):
        if tool == "kbtools":
            return [binary, "-q", "index", bundle, "--index", out]
        extra = [str(TANTIVY_HEAP), str(TANTIVY_THREADS)] if tool == "tantivy" else []
        return [sys.executable, scripts["build", tool], pages_dir, out] + extra

    # build: also the indexes the query section searches (one untimed round when build is not asked)
    builds = {t: {"wall": [], "cpu": [], "rss": []} for t in TOOLS}
    kept = {}
    for r in range(args.rounds if "build" in only else 1 if "query" in only else 0):
        for tool in rotated(TOOLS, r):
            out = tempfile.mkdtemp(dir=work, prefix=f"{tool}-")
            wall, cpu, rss, stdout = measured(build_cmd(tool, out), env, os.path.join(work, f"build-{tool}"))
            summary = json.loads(stdout)
            if tool == "kbtools":  # source pages; generated navigation pages are indexed apart
                kb_pages = summary["work"]["pagesIndexed"]
                if not 0 < kb_pages <= len(pages):
                    fail(f"kbtools indexed {kb_pages} source pages of {len(pages)}")
            elif summary["docs"] != len(pages):
                fail(f"{tool} indexed {summary['docs']} pages, expected {len(pages)}")
            builds[tool]["wall"].append(wall); builds[tool]["cpu"].append(cpu); builds[tool]["rss"].append(rss)
            if tool in kept:
                shutil.rmtree(kept[tool], ignore_errors=True)
            kept[tool] = out
    sizes = {t: tree_bytes(kept[t]) for t in kept}
    if kept:
        report["kbtools_source_pages"] = kb_pages
        if kb_pages != len(pages):
            print(f"peers: kbtools counts {kb_pages} of the {len(pages)} files as source pages "
                  "(the others: the bundle's generated navigation pages)")

    rows = []  # (work, {tool: value}, {peer: ratio}, format)

    def ratios(per_round, peer):  # median of per-round kbtools/peer
        return median(k / p for k, p in zip(per_round["kbtools"], per_round[peer]) if p)

    if "build" in only:
        for key, name, scale, fmt in [("wall", "build wall, s", 1, "{:.3f}"),
                                      ("cpu", "build CPU (user+sys), s", 1, "{:.3f}"),
                                      ("rss", "build peak RSS, MiB", 1 / 1024, "{:.0f}")]:
            per_round = {t: builds[t][key] for t in TOOLS}
            rows.append((name, {t: median(per_round[t]) * scale for t in TOOLS},
                         {p: ratios(per_round, p) for p in PEERS}, fmt))
        rows.append(("index on disk, MiB", {t: sizes[t] / 2**20 for t in TOOLS},
                     {p: sizes["kbtools"] / sizes[p] for p in PEERS}, "{:.2f}"))
        report["build"] = {t: dict(builds[t], size_bytes=sizes[t]) for t in TOOLS}

    if "query" in only:
        times = {t: [] for t in TOOLS}
        hits = {t: [] for t in TOOLS}
        floor = []  # GET /openapi/v2/health on the same connection: the HTTP round trip alone
        answer_bytes = []
        for r in range(args.rounds):
            for tool in rotated(TOOLS, r):
                if tool == "kbtools":
                    server = Server(binary, bundle, kept["kbtools"], env, os.path.join(work, "serve.log"))
                    try:
                        for q in queries:  # warm-up pass
                            server.search(q, args.mode)
                        t, h = [], []
                        for _ in range(args.passes):
                            for q in queries:
                                ms, answer = server.search(q, args.mode)
                                t.append(ms); h.append(len(answer["items"]))
                        answer_bytes.append(server.last_bytes)
                        health = []
                        for _ in queries:
                            t0 = time.perf_counter()
                            if server.get("/openapi/v2/health")[0] != 200:
                                fail("health did not answer 200")
                            health.append((time.perf_counter() - t0) * 1000)
                        floor.append(median(health))
                    finally:
                        server.stop()
                else:
                    out = subprocess.run([sys.executable, scripts["query", tool], kept[tool], qjson, str(args.passes)],
                                         capture_output=True, text=True, env=env)
                    if out.returncode != 0:
                        fail(f"{tool} queries failed:\n{out.stderr}")
                    result = json.loads(out.stdout)
                    t, h = result["times"], result["hits"]
                times[tool].append(t); hits[tool].append(h)
        p50 = {t: [median(x) for x in times[t]] for t in TOOLS}
        p99 = {t: [nearest_rank(x, 99) for x in times[t]] for t in TOOLS}
        mode = f"kbtools {args.mode}"
        rows.append((f"query p50, ms ({mode})", {t: median(p50[t]) for t in TOOLS},
                     {p: ratios(p50, p) for p in PEERS}, "{:.3f}"))
        rows.append(("query p99, ms", {t: median(p99[t]) for t in TOOLS},
                     {p: ratios(p99, p) for p in PEERS}, "{:.3f}"))
        rows.append(("results per query (median)", {t: median(hits[t][-1]) for t in TOOLS}, {}, "{:g}"))
        report["query"] = {t: {"p50_ms": p50[t], "p99_ms": p99[t], "times_ms": times[t],
                               "median_hits": median(hits[t][-1])} for t in TOOLS}
        report["query"]["kbtools"]["http_floor_p50_ms"] = floor

    if rows:
        print()
        print("| Work | " + " | ".join(labels[t] for t in TOOLS) + " |")
        print("|---|" + "---:|" * len(TOOLS))
        for name, values, rs, fmt in rows:
            cells = [fmt.format(values[t]) + (f" ({rs[t]:.2f}x)" if t in rs else "") for t in TOOLS]
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()
        print("Ratios in parentheses: kbtools / peer, the median of per-round ratios (above 1: kbtools slower "
              "or larger); values: medians over rounds.")
        report["table"] = [{"work": name, "values": values, "ratios": rs} for name, values, rs, _ in rows]
    if "build" in only:
        print("build wall per round, s: " + "; ".join(
            f"{t} " + " ".join(f"{w:.3f}" for w in builds[t]["wall"]) for t in TOOLS))
    if "query" in only:
        print("query p50 per round, ms: " + "; ".join(
            f"{t} " + " ".join(f"{x:.3f}" for x in report["query"][t]["p50_ms"]) for t in TOOLS))
        print(f"kbtools's HTTP round trip alone (GET /openapi/v2/health on the same connection, after the "
              f"queries): p50 {median(floor):.3f} ms; the last search answer was {answer_bytes[-1]:,} bytes of JSON")

    if "semantic" in only:
        report["semantic"] = semantic(args, binary, bundle, queries, env, work)
    report["machine"]["loadavg_end"] = os.getloadavg()
    print(f"peers: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at end")
    return report


def semantic(args, binary, bundle, queries, env, work):
    model_dir = os.path.abspath(args.model_dir)
    index = os.path.join(work, "kbtools-semantic")
    t0 = time.perf_counter()
    out = subprocess.run([binary, "-q", "index", bundle, "--index", index, "--semantic"],
                         capture_output=True, text=True, env=dict(env, KBTOOLS_MODEL_DIR=model_dir))
    if out.returncode != 0:
        fail(f"kbtools index --semantic failed:\n{out.stderr}")
    print(f"\npeers: semantic index built in {time.perf_counter() - t0:.1f} s (untimed)")
    warmup, unseen = queries[: args.semantic_warmup], queries[args.semantic_warmup:]
    lanes = {"on": model_dir, "off": env["KBTOOLS_MODEL_DIR"]}
    times = {lane: [] for lane in lanes}
    for r in range(args.rounds):
        servers = {}
        try:
            for lane in rotated(list(lanes), r):
                servers[lane] = Server(binary, bundle, index, dict(env, KBTOOLS_MODEL_DIR=lanes[lane]),
                                       os.path.join(work, f"serve-{lane}.log"))
            for q in warmup:
                for lane in lanes:
                    servers[lane].search(q, "hybrid")
            round_times = {lane: [] for lane in lanes}
            for i, q in enumerate(unseen):
                for lane in rotated(list(lanes), r + i):
                    ms, answer = servers[lane].search(q, "hybrid")
                    if (answer["semanticStatus"]["state"] == "ready") != (lane == "on"):
                        fail(f"lane {lane}: semanticStatus {answer['semanticStatus']} for {q!r}")
                    round_times[lane].append(ms)
        finally:
            for server in servers.values():
                server.stop()
        for lane in lanes:
            times[lane].append(round_times[lane])
    p50 = {lane: [median(t) for t in times[lane]] for lane in lanes}
    p99 = {lane: [nearest_rank(t, 99) for t in times[lane]] for lane in lanes}
    ratio = median(on / off for on, off in zip(p50["on"], p50["off"]))
    print(f"\n| kbtools hybrid, {len(unseen)} unseen questions | semantic lane on | lane off (no model) |")
    print("|---|---:|---:|")
    print(f"| p50, ms | {median(p50['on']):.2f} ({ratio:.2f}x) | {median(p50['off']):.2f} |")
    print(f"| p99, ms | {median(p99['on']):.2f} | {median(p99['off']):.2f} |")
    print("Ratio: on / off, the median of per-round ratios.")
    return {"questions": len(unseen), "warmup": len(warmup), "p50_ms": p50, "p99_ms": p99,
            "ratio_p50_on_off": ratio, "times_ms": times}


if __name__ == "__main__":
    main()
