#!/usr/bin/env python3
"""warm_unseen.py BIN INDEX BUNDLE QUERIES.jsonl MODELS_ON MODELS_OFF: two `kbtools serve` of one
binary on the same index, A with KBTOOLS_MODEL_DIR=MODELS_ON (lanes on), B with MODELS_OFF (no
models: lanes off); warmed on made-up questions, then every question once to each (alternating
which goes first), keep-alive: each question is unseen by each server. p50/p90 per server."""
import http.client, json, os, socket, subprocess, sys, time, urllib.parse
binary, index, bundle, queries, on, off = sys.argv[1:7]
qs = [json.loads(l)["text"] for l in open(queries) if l.strip()][:300]
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
servers = []
for models in (on, off):
    p = port()
    env = dict(os.environ, KBTOOLS_MODEL_DIR=models)
    proc = subprocess.Popen([binary, "serve", "--bundle", bundle, "--index", index, "--no-refresh",
                             "--addr", f"127.0.0.1:{p}", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    servers.append((proc, p))
conns = []
for proc, p in servers:
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", p); c.request("GET", "/openapi/v2/knowledge-bases")
            kb = json.loads(c.getresponse().read())["items"][0]["knowledgeBaseId"]; break
        except Exception: time.sleep(0.1)
    conns.append((c, kb))
times = [[], []]
statuses = [{}, {}]
def ask(i, q):
    c, kb = conns[i]
    path = f"/openapi/v2/knowledge-bases/{kb}/files/search?" + urllib.parse.urlencode({"query": q, "limit": 10})
    t = time.perf_counter(); c.request("GET", path); r = c.getresponse(); body = r.read()
    ms = (time.perf_counter() - t) * 1000
    try:
        s = json.loads(body).get("semanticStatus", {}).get("state")
    except Exception:
        s = None
    statuses[i][s] = statuses[i].get(s, 0) + 1
    return ms
for k in range(20):
    ask(0, f"warm up question number {k} about settings"); ask(1, f"warm up question number {k} about settings")
statuses = [{}, {}]
for n, q in enumerate(qs):
    for i in ((0, 1) if n % 2 == 0 else (1, 0)):
        times[i].append(ask(i, q))
for proc, _ in servers: proc.terminate()
p50 = []
for i, name in enumerate(("lanes on", "lanes off")):
    t = sorted(times[i]); p50.append(t[len(t)//2])
    print(f"{name}: n={len(t)} p50={t[len(t)//2]:.3f} ms p90={t[int(len(t)*0.9)]:.3f} ms semanticStatus={statuses[i]}")
print(f"ratio p50 {p50[0]/p50[1]:.2f}x")
