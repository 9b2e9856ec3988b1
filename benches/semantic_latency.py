#!/usr/bin/env python3
"""Warm `search_files` of unseen questions with the semantic lanes on and off (issue 42).

For each binary and each of two model folders (MODEL_DIR with the installed models: the lanes
on; an empty folder: the lanes off), one `kbtools -q --index INDEX --no-refresh serve BUNDLE`
on a free loopback port. Once it answers /openapi/v2/health, --warmup questions from the end of
the file are asked (untimed), then each of the first --count questions exactly once (a server
caches a question's embedding, so a question asked again is not unseen) as
`GET /openapi/v2/knowledge-bases/{id}/files/search?query=Q&mode=hybrid&limit=10` over one kept-alive
connection, timed from the request to the whole body. Rounds alternate the order of the
binaries. Prints, per binary, the median over rounds of the p50 and p99 (ms) with the lanes on
and off, and the ratio on/off of the p50s. The lanes-on server must report
`semanticStatus.state` `ready`, the lanes-off one must not.

Usage: python3 benches/semantic_latency.py BUNDLE INDEX QUERIES.jsonl MODEL_DIR
                                           [--binary PATH ...] [--count 150] [--warmup 10]
                                           [--rounds 2]
INDEX must be built with the models (`KBTOOLS_MODEL_DIR=MODEL_DIR kbtools index BUNDLE --index
INDEX`); QUERIES is BEIR form ({"_id", "text"} per line).
"""
import argparse, http.client, json, os, socket, statistics, subprocess, sys, tempfile, time
import urllib.parse

sys.dont_write_bytecode = True
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

ap = argparse.ArgumentParser()
ap.add_argument("bundle")
ap.add_argument("index")
ap.add_argument("queries")
ap.add_argument("model_dir")
ap.add_argument("--binary", action="append")
ap.add_argument("--count", type=int, default=150)
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--rounds", type=int, default=2)
args = ap.parse_args()
binaries = args.binary or [os.path.join(ROOT, "target", "release", "kbtools")]
questions = [json.loads(l)["text"] for l in open(args.queries, encoding="utf-8") if l.strip()]
if len(questions) < args.count + args.warmup:
    args.count = max(1, len(questions) - args.warmup)
timed, warm = questions[: args.count], questions[-args.warmup :]
no_models = tempfile.mkdtemp()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(binary, model_dir):
    """Latencies (ms) of the timed questions on one fresh server."""
    port = free_port()
    env = dict(os.environ, KBTOOLS_MODEL_DIR=model_dir)
    cmd = [binary, "-q", "--index", args.index, "--no-refresh", "serve", args.bundle,
           "--addr", f"127.0.0.1:{port}"]
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("GET", "/openapi/v2/health")
                response = conn.getresponse()
                response.read()
                if response.status == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline or server.poll() is not None:
                sys.exit(f"the server did not start: {cmd}")
            time.sleep(0.05)
        conn.request("GET", "/openapi/v2/knowledge-bases")
        kb = json.loads(conn.getresponse().read())["items"][0]["knowledgeBaseId"]

        def ask(question):
            query = urllib.parse.urlencode({"query": question, "mode": "hybrid", "limit": 10})
            start = time.perf_counter()
            conn.request("GET", f"/openapi/v2/knowledge-bases/{kb}/files/search?{query}")
            response = conn.getresponse()
            body = response.read()
            took = (time.perf_counter() - start) * 1000
            if response.status != 200:
                sys.exit(f"{response.status} for {question!r}: {body[:300]!r}")
            state = json.loads(body)["semanticStatus"]["state"]
            if (state == "ready") != (model_dir != no_models):
                sys.exit(f"semanticStatus {state} with KBTOOLS_MODEL_DIR={model_dir}")
            return took

        for question in warm:
            ask(question)
        return [ask(question) for question in timed]
    finally:
        server.terminate()
        server.wait()


def p99(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


figures = {b: {"on": [], "off": []} for b in binaries}
for r in range(args.rounds):
    order = binaries if r % 2 == 0 else list(reversed(binaries))
    for binary in order:
        for lanes, model_dir in (("on", args.model_dir), ("off", no_models)):
            figures[binary][lanes].append(serve(binary, model_dir))

print(f"{len(timed)} unseen questions, {args.rounds} rounds; medians over rounds, ms")
for binary in binaries:
    f = figures[binary]
    on50 = statistics.median(statistics.median(x) for x in f["on"])
    off50 = statistics.median(statistics.median(x) for x in f["off"])
    on99 = statistics.median(p99(x) for x in f["on"])
    off99 = statistics.median(p99(x) for x in f["off"])
    print(f"  {binary}: lanes on p50 {on50:.2f} p99 {on99:.2f}; lanes off p50 {off50:.2f} "
          f"p99 {off99:.2f}; on/off {on50 / off50:.2f}x")
