#!/usr/bin/env python3
"""Soak test of a watching server: `kbtools serve --watch` on a copy of a bundle, a change to
the copy every --change-every seconds (edits, new pages, deletes, renames), queries in a loop,
and the server's RSS sampled every second. Bounded in time and in requests; only loopback.

It prints one line per sample window (RSS min/max, requests, failures, rebuilds seen) and a
summary, writes every sample to --csv when given, and exits 1 when a request failed or, with
--check-level, when memory does not level off: the lowest RSS of the last third of the run may
exceed that of the middle third by at most --level-slack MB.

Usage (10 minutes on SciFact, a change every 0.5 s, as the issue measured it):

    cargo build --release
    python3 tests/soak/soak.py --bundle ../shared/bundles/scifact --seconds 600 \
        --binary target/release/kbtools --check-level --csv target/soak-scifact.csv

CI runs a short one on the fixture (tests/soak/ci.sh).
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

# Hang guards, not speed bounds (CI runs a debug build on a loaded 2-core machine): the longest
# wait for one answer, and for the server to start answering.
HANG_S = 300
START_S = 600


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.failures = 0
        self.changes = 0
        self.failure_samples = []

    def ok(self):
        with self.lock:
            self.requests += 1

    def fail(self, what):
        with self.lock:
            self.requests += 1
            self.failures += 1
            if len(self.failure_samples) < 10:
                self.failure_samples.append(what)


def pages_of(root):
    pages = []
    base = os.path.join(root, "pages")
    if not os.path.isdir(base):
        base = root
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.endswith(".md"):
                pages.append(os.path.join(dirpath, name))
    pages.sort()
    return pages


def words_of(path, rng, n=3):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(4000)
    except OSError:
        return "knowledge base"
    words = [w.strip(".,;:()[]#*`\"'") for w in text.split()]
    words = [w for w in words if len(w) > 3 and w.isalpha()]
    if not words:
        return "knowledge base"
    start = rng.randrange(max(1, len(words) - n))
    return " ".join(words[start : start + n])


def editor(root, pages, counters, stop, every, rng):
    """One change every `every` seconds: edit a page, add one, delete or rename an added one."""
    base = os.path.join(root, "pages") if os.path.isdir(os.path.join(root, "pages")) else root
    added = []
    n = 0
    while not stop.is_set():
        time.sleep(every)
        n += 1
        op = rng.random()
        if not added:
            op *= 0.7  # nothing added yet to delete or rename: edit or add
        try:
            if op < 0.45:
                path = rng.choice(pages)
                with open(path, "a", encoding="utf-8") as f:
                    f.write(f"\nsoak edit {n} about lanterns and quartz\n")
            elif op < 0.7:
                path = os.path.join(base, f"soak-{n}.md")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(f"# Soak page {n}\n\nA page about lanterns, quartz and basalt {n}.\n")
                added.append(path)
            elif op < 0.85:
                path = added.pop(rng.randrange(len(added)))
                os.remove(path)
            else:
                path = added.pop(rng.randrange(len(added)))
                renamed = os.path.join(base, f"soak-{n}-renamed.md")
                os.rename(path, renamed)
                added.append(renamed)
            with counters.lock:
                counters.changes += 1
        except OSError as e:
            print(f"editor: {e}", file=sys.stderr)


def querier(addr, root, pages, counters, stop, deadline, rng, max_requests):
    while not stop.is_set() and time.time() < deadline:
        with counters.lock:
            if counters.requests >= max_requests:
                return
        page = rng.choice(pages)
        if rng.random() < 0.7:
            query = urllib.parse.quote(words_of(page, rng))
            target = f"/search?query={query}&limit=10"
            want = "items"
        else:
            rel = os.path.relpath(page, root).replace(os.sep, "/")
            if not rel.startswith("pages/"):
                rel = "pages/" + rel
            target = "/files/content?path=" + urllib.parse.quote(rel)
            want = "content"
        try:
            # A hang guard, not a speed bound: a slow answer on a loaded machine is no failure.
            with urllib.request.urlopen(f"http://{addr}{target}", timeout=HANG_S) as r:
                body = json.loads(r.read())
                if want in body:
                    counters.ok()
                else:
                    counters.fail(f"{target}: no {want}")
        except urllib.error.HTTPError as e:
            # A page read while it is being edited is still there (edits only append), so any
            # error status is a failure.
            counters.fail(f"{target}: HTTP {e.code}")
        except Exception as e:  # connection refused, reset, time-out
            counters.fail(f"{target}: {e!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True, help="bundle to copy and serve")
    ap.add_argument("--binary", default="target/release/kbtools")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--change-every", type=float, default=0.5)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--max-requests", type=int, default=2_000_000)
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--check-level", action="store_true")
    ap.add_argument("--level-slack", type=float, default=8.0, help="MB")
    ap.add_argument("--max-rss", type=float, default=0, help="MB; 0: no bound")
    ap.add_argument("--csv")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="kbtools-soak-")
    root = os.path.join(work, "bundle")
    shutil.copytree(args.bundle, root, symlinks=False)
    pages = pages_of(root)
    if not pages:
        sys.exit(f"no Markdown pages in {args.bundle}")
    index_dir = os.path.join(work, "index")
    build = subprocess.run(
        [args.binary, "index", root, "--index", index_dir, "-q"], capture_output=True, text=True
    )
    if build.returncode != 0:
        sys.exit(f"kbtools index failed: {build.stderr}")
    port = free_port()
    addr = f"127.0.0.1:{port}"
    log_path = os.path.join(work, "serve.log")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBTOOLS_")}
    server = subprocess.Popen(
        [args.binary, "serve", "--bundle", root, "--index", index_dir, "--watch", "--addr", addr],
        stdout=subprocess.DEVNULL,
        stderr=open(log_path, "w"),
        env=env,
    )
    try:
        started = time.time()
        while True:
            try:
                urllib.request.urlopen(f"http://{addr}/openapi/v2/health", timeout=5).read()
                break
            except Exception:
                if server.poll() is not None or time.time() - started > START_S:
                    sys.exit(f"serve did not start: {open(log_path).read()}")
                time.sleep(0.1)

        counters = Counters()
        stop = threading.Event()
        start = time.time()
        deadline = start + args.seconds
        threads = [
            threading.Thread(
                target=editor,
                args=(root, pages, counters, stop, args.change_every, random.Random(args.seed + 1)),
                daemon=True,
            )
        ]
        for i in range(args.clients):
            threads.append(
                threading.Thread(
                    target=querier,
                    args=(addr, root, pages, counters, stop, deadline,
                          random.Random(args.seed + 2 + i), args.max_requests),
                    daemon=True,
                )
            )
        for t in threads:
            t.start()
        samples = []
        while time.time() < deadline and server.poll() is None:
            time.sleep(1.0)
            rss = rss_kib(server.pid)
            with counters.lock:
                samples.append((time.time() - start, rss, counters.requests, counters.failures,
                                counters.changes))
        stop.set()
        for t in threads:
            t.join(timeout=60)
        exited = server.poll()
        with open(log_path) as f:
            rebuilds = sum(1 for line in f if "index ready at" in line)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()

    if args.csv:
        with open(args.csv, "w") as f:
            f.write("seconds,rss_kib,requests,failures,changes\n")
            for s in samples:
                f.write(",".join(str(x) for x in s) + "\n")
    rss = [(t, r) for (t, r, *_rest) in samples if r is not None]
    n = max(1, args.windows)
    span = args.seconds / n
    print("window      rss min   rss max  (MB)   requests  failures  changes")
    window_mins = []
    for w in range(n):
        inside = [s for s in samples if w * span <= s[0] < (w + 1) * span and s[1] is not None]
        if not inside:
            continue
        lo = min(s[1] for s in inside) / 1024
        hi = max(s[1] for s in inside) / 1024
        window_mins.append(lo)
        last = inside[-1]
        print(f"{w * span:5.0f}-{(w + 1) * span:<5.0f} {lo:8.1f}  {hi:8.1f}        "
              f"{last[2]:9d} {last[3]:9d} {last[4]:8d}")
    total = samples[-1] if samples else (0, None, 0, 0, 0)
    peak = max((r for _, r in rss), default=0) / 1024
    print(f"requests {total[2]}, failures {total[3]}, changes {total[4]}, rebuilds {rebuilds}, "
          f"peak RSS {peak:.1f} MB, server {'exited ' + str(exited) if exited is not None else 'ran to the end'}")
    for what in counters.failure_samples:
        print(f"failure: {what}")
    status = 0
    if total[3] > 0 or exited is not None:
        status = 1
    if args.check_level and len(rss) >= 6:
        third = len(rss) // 3
        middle = min(r for _, r in rss[third : 2 * third]) / 1024
        last = min(r for _, r in rss[2 * third :]) / 1024
        levels = last <= middle + args.level_slack
        print(f"lowest RSS: middle third {middle:.1f} MB, last third {last:.1f} MB: "
              f"{'levels off' if levels else 'still rising'} (slack {args.level_slack} MB)")
        if not levels:
            status = 1
    if args.max_rss and peak > args.max_rss:
        print(f"peak RSS {peak:.1f} MB over the bound of {args.max_rss} MB")
        status = 1
    print(f"{1 if status == 0 else 0} passed, {0 if status == 0 else 1} failed")
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
