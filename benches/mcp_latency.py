#!/usr/bin/env python3
"""Client-measured latency of MCP tool calls over the stdio transport, and the server's peak
memory. Starts `kbtools mcp <BUNDLE>` once (index built beforehand, so the start is excluded),
does the 2025-11-25 handshake, then times each `tools/call` from the request written to the
response read: `search_files` over the queries, `read_file` of each query's top candidate (text
format, the default). Peak memory is the server's VmHWM from /proc when the calls are done.

Usage: python3 benches/mcp_latency.py <BUNDLE> [--queries QUERIES.jsonl] [--calls 200]
                                       [--index DIR (an existing index of BUNDLE, not rebuilt)]
Build the binary first: cargo build --release
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("bundle")
ap.add_argument("--queries", help="BEIR queries.jsonl (default: a few fixed questions)")
ap.add_argument("--calls", type=int, default=200, help="search_files calls (and as many reads)")
ap.add_argument("--format", default="text", choices=["text", "json"])
ap.add_argument("--index", help="an index already built for BUNDLE: used as it is (no build)")
ap.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "kbtools"))
args = ap.parse_args()

queries = ["How do agents read related files?", "知识库如何组织页面？", "What is the bundle format?"]
if args.queries:
    queries = [json.loads(l)["text"] for l in open(args.queries, encoding="utf-8") if l.strip()]
queries = [q[:500] for q in queries if len(q.strip()) >= 2][: args.calls]

with tempfile.TemporaryDirectory() as scratch:
    index = args.index or scratch
    if not args.index:
        subprocess.run([args.binary, "index", args.bundle, "--index", index, "-q"], check=True,
                       stdout=subprocess.DEVNULL)
    server = subprocess.Popen([args.binary, "mcp", args.bundle, "--index", index, "-q",
                               "--no-refresh"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
    next_id = 0

    def request(method, params=None):
        global next_id
        next_id += 1
        message = {"jsonrpc": "2.0", "id": next_id, "method": method}
        if params is not None:
            message["params"] = params
        started = time.perf_counter()
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        while True:
            line = server.stdout.readline()
            if not line:
                sys.exit("the server closed stdout")
            reply = json.loads(line)
            if reply.get("id") == next_id:
                return reply, (time.perf_counter() - started) * 1000

    request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "mcp_latency", "version": "1"}})
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    server.stdin.flush()

    search_ms, read_ms, errors = [], [], 0
    for q in queries:
        reply, ms = request("tools/call", {"name": "search_files",
                                           "arguments": {"query": q, "format": "json", "limit": 10}})
        search_ms.append(ms)
        result = reply.get("result", {})
        if result.get("isError"):
            errors += 1
            continue
        items = result.get("structuredContent", {}).get("items", [])
        if not items:
            continue
        reply, ms = request("tools/call", {"name": "read_file",
                                           "arguments": {"fileId": items[0]["fileId"], "format": args.format}})
        read_ms.append(ms)
        errors += bool(reply.get("result", {}).get("isError"))

    peak_kib = 0
    with open(f"/proc/{server.pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                peak_kib = int(line.split()[1])
    server.stdin.close()
    server.wait(timeout=10)

def summary(name, values):
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    print(f"{name:<13} n={len(values):<4} median {statistics.median(values):7.2f} ms   p99 {p99:7.2f} ms")

print(f"bundle {args.bundle}: MCP stdio, client-measured (search_files in json to get ids; read_file in {args.format})")
summary("search_files", search_ms)
summary("read_file", read_ms)
print(f"server peak RSS (VmHWM) {peak_kib / 1024:.1f} MiB; tool errors {errors}")
