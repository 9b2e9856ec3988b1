"""Read replicas behind real load balancers (docs/scaling.md), as CI runs them.

One builder publishes the fixture bundle's index (`kbtools index --publish`) and copies it to
the readers' folder with rsync as docs/scaling.md says (the generation first, `CURRENT` last, by a
rename); three `kbtools serve --index READERS --no-refresh` replicas answer from that folder
alone, on loopback ports, behind Debian's nginx (the REST routes) and HAProxy (MCP over HTTP, sticky by
`Mcp-Session-Id`), both with the configurations docs/scaling.md shows (tests/replicas/*.conf).

Checks, under a steady bounded search load through nginx:
  - a replica killed with SIGKILL: no request fails (nginx retries the next upstream), and the
    replica, started again, serves requests again;
  - a new revision published while the load runs: every replica serves it (the time each
    took is printed), no request fails, every response is of one revision, and a cursor of the
    old revision is refused with the contract's error by a replica on the new one;
  - throughput: requests/s of one replica alone and of the three through nginx, and nginx's
    overhead per request (the figure is bounded by this machine's cores, not a speed-up).
With the MCP Python SDK (tests/mcp's virtualenv; without it that check fails, saying how to
make it): several sessions through HAProxy, each initialized on one replica and every later call routed back to
it; their tool calls succeed.

Every wait is bounded against a hang only (HANG_S), never against a speed: CI runs the debug
build on a loaded 2-core machine. Standard library only, besides the SDK. The last line is
`N passed, N failed`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# The longest wait for a process to listen, for one answer, or for a replica to switch to a new
# revision: a hang guard, far past what a debug build on a loaded machine takes.
HANG_S = 300.0
QUERIES = [
    "How do agents read related files?",
    "graph relations between pages",
    "deploy with docker compose",
    "知识库 图谱",
    "search modes hybrid file graph",
    "OKF trust tier human reviewed",
    "API keys for the developer OpenAPI",
    "list the file tree",
]


class Results:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, seconds: float = HANG_S) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def get(port: int, path: str, conn: http.client.HTTPConnection | None = None):
    """(status, parsed JSON body, headers) of GET `path`."""
    own = conn is None
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_S)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        return r.status, json.loads(body) if body else None, dict(r.getheaders())
    finally:
        if own:
            c.close()


class Replica:
    def __init__(self, binary: str, pub: Path, port: int, log: Path) -> None:
        self.binary, self.pub, self.port, self.log = binary, pub, port, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [self.binary, "-q", "--index", str(self.pub), "--no-refresh", "serve",
             "--addr", f"127.0.0.1:{self.port}"],
            stdout=out, stderr=out, start_new_session=True,
        )
        if not wait_port(self.port):
            raise RuntimeError(f"replica on {self.port} did not start; see {self.log}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def peak_rss_mib(self) -> float | None:
        """The replica's peak resident memory (Linux `VmHWM`), in MiB."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except (OSError, AttributeError, ValueError):
            pass
        return None

    def health(self) -> dict | None:
        try:
            status, body, _ = get(self.port, "/openapi/v2/health")
            return body if status == 200 else None
        except OSError:
            return None


def render(template: Path, out: Path, values: dict[str, str]) -> None:
    text = template.read_text()
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    out.write_text(text)


class Load:
    """`threads` clients searching (and paging, and reading) through `port` until stopped."""

    def __init__(self, port: int, kb: str, threads: int) -> None:
        self.port, self.kb, self.threads = port, kb, threads
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.mixed: list[str] = []
        self.upstreams: dict[str, int] = {}
        # When each response came (monotonic) and from which replica, as nginx names it.
        self.answered: list[tuple[float, str]] = []
        self.revisions: set[int] = set()
        self.workers = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(threads)]

    def start(self) -> None:
        for w in self.workers:
            w.start()

    def finish(self) -> None:
        self.stop.set()
        for w in self.workers:
            w.join()

    def run(self, worker: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG_S)
        i = worker
        while not self.stop.is_set():
            query = QUERIES[i % len(QUERIES)]
            i += 1
            path = (f"/openapi/v2/knowledge-bases/{self.kb}/files/search?"
                    + urllib.parse.urlencode({"query": query, "limit": 5}))
            started = time.perf_counter()
            try:
                status, body, headers = get(self.port, path, conn)
            except (OSError, http.client.HTTPException, ValueError) as e:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG_S)
                with self.lock:
                    self.failures.append(f"{query}: {e!r}")
                continue
            elapsed = (time.perf_counter() - started) * 1000
            with self.lock:
                self.latencies.append(elapsed)
                upstream = headers.get("X-Upstream", "?")
                self.upstreams[upstream] = self.upstreams.get(upstream, 0) + 1
                self.answered.append((time.monotonic(), upstream))
                if status != 200:
                    self.failures.append(f"{query}: HTTP {status} {json.dumps(body)[:200]}")
                    continue
                revision = body.get("activeContentRevision")
                self.revisions.add(revision)
                others = {item.get("activeContentRevision") for item in body.get("items", [])}
                if others - {revision}:
                    self.mixed.append(f"{query}: response {revision}, items {sorted(others)}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def throughput(port: int, kb: str, threads: int, seconds: float) -> tuple[float, float]:
    """Requests/s and p50 (ms) of `threads` clients searching through `port` for `seconds`."""
    load = Load(port, kb, threads)
    load.start()
    time.sleep(seconds)
    load.finish()
    return len(load.latencies) / seconds, statistics.median(load.latencies or [float("nan")])


def publish(binary: str, bundle: Path, work: Path) -> dict:
    """Builds and publishes on the builder (`pub`), then copies to the readers' folder
    (`readers`) as docs/scaling.md does: the generation with rsync, then `CURRENT` by rsync to a
    side name and a rename."""
    out = subprocess.run(
        [binary, "-q", "index", str(bundle), "--index", str(work / "idx"), "--no-semantic",
         "--publish", str(work / "pub")],
        check=True, capture_output=True, text=True,
    )
    pub, readers = work / "pub", work / "readers"
    readers.mkdir(exist_ok=True)
    generation = (pub / "CURRENT").read_text().strip()
    subprocess.run(["rsync", "-a", "--delete-after", f"{pub / generation}/",
                    f"{readers / generation}/"], check=True)
    subprocess.run(["rsync", "-a", str(pub / "CURRENT"), str(readers / "CURRENT.new")],
                   check=True)
    os.replace(readers / "CURRENT.new", readers / "CURRENT")
    return json.loads(out.stdout)


def mcp_sessions(results: Results, port: int, sessions: int, python: str | None) -> None:
    """The SDK's sessions through HAProxy (tests/replicas/mcp_sessions.py in tests/mcp's venv)."""
    if not python:
        print("skip MCP through HAProxy: no tests/mcp virtualenv (run tests/mcp/run.sh once)",
              flush=True)
        results.check("MCP sessions through HAProxy (skipped: no SDK virtualenv)", False,
                      "make target/mcp-venv with tests/mcp/run.sh")
        return
    # A backstop against a hang of the whole run; each request has its own guard there.
    run = subprocess.run(
        [python, str(HERE / "mcp_sessions.py"), f"http://127.0.0.1:{port}/mcp", str(sessions)],
        capture_output=True, text=True, timeout=6 * HANG_S,
    )
    print(run.stdout + run.stderr, flush=True)
    results.check(f"{sessions} MCP sessions (sticky by Mcp-Session-Id) and {sessions} "
                  "handshake-less MCP clients through HAProxy",
                  run.returncode == 0, run.stdout[-400:] + run.stderr[-400:])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=3)
    parser.add_argument("--mcp-python", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    binary = str(Path(args.binary).resolve())
    results = Results()
    work = Path(tempfile.mkdtemp(prefix="kbtools-replicas-"))
    replicas: list[Replica] = []
    balancers: list[subprocess.Popen] = []
    try:
        bundle = work / "bundle"
        shutil.copytree(ROOT / "fixtures" / "focowiki-docs", bundle)
        first = publish(binary, bundle, work)
        (work / "tmp").mkdir()
        replicas = [Replica(binary, work / "readers", free_port(), work / f"replica-{i}.log")
                    for i in range(3)]
        # The builder's bundle is not where the replicas look: they answer from the folder.
        shutil.move(str(bundle), str(work / "bundle-on-the-builder"))
        bundle = work / "bundle-on-the-builder"
        for r in replicas:
            r.start()
        ports = {f"PORT{i + 1}": str(r.port) for i, r in enumerate(replicas)}
        nginx_port, haproxy_port = free_port(), free_port()
        values = dict(ports, WORK=str(work), NGINX_PORT=str(nginx_port),
                      HAPROXY_PORT=str(haproxy_port))
        render(HERE / "nginx.conf", work / "nginx.conf", values)
        render(HERE / "haproxy.cfg", work / "haproxy.cfg", values)
        balancers.append(subprocess.Popen(
            ["nginx", "-c", str(work / "nginx.conf"), "-p", str(work)],
            stdout=subprocess.DEVNULL, stderr=open(work / "nginx.log", "wb")))
        balancers.append(subprocess.Popen(
            ["haproxy", "-f", str(work / "haproxy.cfg"), "-db"],
            stdout=subprocess.DEVNULL, stderr=open(work / "haproxy.log", "wb")))
        results.check("nginx and HAProxy start", wait_port(nginx_port) and wait_port(haproxy_port),
                      (work / "nginx.log").read_text() + (work / "haproxy.log").read_text())
        kb = first["knowledgeBaseId"]
        revision = first["activeContentRevision"]
        results.check("every replica answers the published revision with no bundle beside it",
                      all((r.health() or {}).get("knowledgeBases", [{}])[0]
                          .get("activeContentRevision") == revision for r in replicas),
                      str([r.health() for r in replicas]))
        # A cursor of the first revision, for the refusal check once the next one is live.
        _, page, _ = get(nginx_port, f"/openapi/v2/knowledge-bases/{kb}/files/search?"
                         + urllib.parse.urlencode({"query": "knowledge base", "limit": 1}))
        old_cursor = page.get("nextCursor")

        load = Load(nginx_port, kb, args.threads)
        started = time.monotonic()
        load.start()
        third = args.seconds / 4
        time.sleep(third)
        replicas[1].kill()
        killed_at = time.monotonic() - started
        time.sleep(1.0)
        replicas[1].start()
        restarted_at = time.monotonic()
        rejoined_at = restarted_at - started
        time.sleep(third)
        # A new revision: a page changed on the builder, built and published.
        page_file = bundle / "pages" / "en" / "README.md"
        page_file.write_text(page_file.read_text() + "\nReplicas switch between requests.\n")
        second = publish(binary, bundle, work)
        published_at = time.monotonic()
        new_revision = second["activeContentRevision"]
        switched: dict[int, float] = {}
        while len(switched) < len(replicas) and time.monotonic() - published_at < HANG_S:
            for r in replicas:
                h = r.health() or {}
                kbs = h.get("knowledgeBases") or [{}]
                if r.port not in switched and kbs[0].get("activeContentRevision") == new_revision:
                    switched[r.port] = time.monotonic() - published_at
            time.sleep(0.02)
        remaining = args.seconds - (time.monotonic() - started)
        time.sleep(max(remaining, 1.0))
        # Then on until the load has seen the new revision and the restarted replica has
        # answered it (a loaded machine answers fewer requests in the same time).
        restarted = f"127.0.0.1:{replicas[1].port}"

        def answered_after_restart() -> int:
            with load.lock:
                return sum(1 for at, upstream in load.answered
                           if at > restarted_at and upstream == restarted)

        def saw_new_revision() -> bool:
            with load.lock:
                return new_revision in load.revisions

        give_up = time.monotonic() + HANG_S
        while time.monotonic() < give_up and not (saw_new_revision()
                                                  and answered_after_restart() > 0):
            time.sleep(0.1)
        load.finish()

        sent = len(load.latencies) + len([f for f in load.failures if "HTTP" not in f])
        failed = len(load.failures)
        p50, p99 = percentile(load.latencies, 0.5), percentile(load.latencies, 0.99)
        print(f"load through nginx: {sent} requests, {failed} failed, p50 {p50:.2f} ms, "
              f"p99 {p99:.2f} ms, {args.threads} clients, {args.seconds:.0f} s; replica "
              f"{replicas[1].port} killed at {killed_at:.1f} s, started again at "
              f"{rejoined_at:.1f} s; upstreams {load.upstreams}", flush=True)
        for r in replicas:
            at = switched.get(r.port)
            print(f"replica {r.port}: serves revision {new_revision} "
                  + (f"{at:.2f} s after the publish" if at is not None
                     else f"not within {HANG_S:.0f} s"),
                  flush=True)
        results.check("no request through nginx failed while a replica died and a revision "
                      "was published", failed == 0, "; ".join(load.failures[:5]))
        results.check("every response is of one revision", not load.mixed,
                      "; ".join(load.mixed[:5]))
        results.check("the load saw both revisions", {revision, new_revision} <= load.revisions,
                      str(load.revisions))
        results.check("every replica serves the new revision after the publish",
                      len(switched) == len(replicas), str(switched))
        # Requests after the restart reached it again (nginx names the upstream that answered).
        again = answered_after_restart()
        print(f"replica {replicas[1].port} answered {again} requests after its restart",
              flush=True)
        results.check("the killed replica, started again, serves requests through nginx",
                      again > 0, str(load.upstreams))
        status, refused, _ = get(nginx_port, f"/openapi/v2/knowledge-bases/{kb}/files/search?"
                                 + urllib.parse.urlencode({"query": "knowledge base", "limit": 1,
                                                           "cursor": old_cursor or ""}))
        error = (refused or {}).get("error", {})
        results.check("a cursor of the old revision is refused with the contract's error",
                      old_cursor is not None and status == 422
                      and error.get("code") == "VALIDATION_ERROR"
                      and (error.get("details") or {}).get("field") == "cursor",
                      f"{status} {refused}")

        one_rps, one_p50 = throughput(replicas[0].port, kb, args.threads, 4.0)
        lb_rps, lb_p50 = throughput(nginx_port, kb, args.threads, 4.0)
        print(f"throughput, {args.threads} clients: one replica direct {one_rps:.0f} requests/s "
              f"(p50 {one_p50:.2f} ms); three replicas through nginx {lb_rps:.0f} requests/s "
              f"(p50 {lb_p50:.2f} ms); nginx adds {lb_p50 - one_p50:.2f} ms per request at the "
              f"median ({os.cpu_count()} cores)", flush=True)
        results.check("throughput measured", one_rps > 0 and lb_rps > 0)
        peaks = [r.peak_rss_mib() for r in replicas]
        print("peak RSS per replica: " + ", ".join(
            f"{p:.0f} MiB" if p is not None else "unknown" for p in peaks), flush=True)

        mcp_sessions(results, haproxy_port, 6, args.mcp_python)
    except Exception as e:  # noqa: BLE001 - one counted failure with what happened
        results.check("replica test ran to its end", False, repr(e))
    finally:
        for b in balancers:
            b.terminate()
            try:
                b.wait(timeout=5)
            except subprocess.TimeoutExpired:
                b.kill()
        for r in replicas:
            r.kill()
        if args.keep or results.failed:
            print(f"scratch folder kept: {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{results.passed} passed, {results.failed} failed", flush=True)
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
