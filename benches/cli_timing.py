#!/usr/bin/env python3
"""Whole-process timings of the kbtools binary on a bundle: index build (fresh index folder each
run; wall time and peak RSS from /usr/bin/time) and `kbtools call search_files` on the built index
(a cold process per query). Prints medians.

Usage: python3 benches/cli_timing.py <BUNDLE> [--queries QUERIES.jsonl] [--builds 5] [--searches 30]
Build the binary first: cargo build --release
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("bundle")
ap.add_argument("--queries", help="BEIR queries.jsonl; default: page titles are not used, fixed queries")
ap.add_argument("--builds", type=int, default=5)
ap.add_argument("--searches", type=int, default=30)
ap.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "kbtools"))
args = ap.parse_args()

def timed(cmd):
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    wall, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss), out.stdout

builds, rss = [], []
for _ in range(args.builds):
    with tempfile.TemporaryDirectory() as d:
        w, r, _ = timed([args.binary, "index", args.bundle, "--index", d, "-q"])
        builds.append(w); rss.append(r)
print(f"index build: median {statistics.median(builds):.3f} s over {len(builds)} runs, peak RSS median {statistics.median(rss)/1024:.0f} MiB (max {max(rss)/1024:.0f} MiB)")

queries = ["knowledge base", "知识库", "how are relations derived from links"]
if args.queries:
    queries = [json.loads(l)["text"][:500] for l in open(args.queries)]
index_dir = tempfile.mkdtemp()
subprocess.run([args.binary, "index", args.bundle, "--index", index_dir, "-q"], check=True, capture_output=True)
times, rss = [], []
for q in queries[: args.searches]:
    t0 = time.perf_counter()
    w, r, out = timed([args.binary, "--index", index_dir, "-q", "call", "search_files", json.dumps({"query": q})])
    times.append(time.perf_counter() - t0); rss.append(r)
    assert json.loads(out)["searchStatus"] in ("ok", "no_candidates")
print(f"kbtools call search_files (cold process, existing index): median {statistics.median(times)*1000:.1f} ms over {len(times)} queries, p90 {sorted(times)[int(len(times)*0.9)-1]*1000:.1f} ms, peak RSS median {statistics.median(rss)/1024:.0f} MiB")
