#!/usr/bin/env python3
"""The HTTP server under the full loads of issue 61 (points 10 and 11), and its peak RSS:

  1. slowloris: 1,100 connections from one address (127.0.0.1) that send half a request head,
     each opened again as soon as the server closes or refuses it, for SECONDS;
  2. 200 clients (127.0.0.3) that ask for a 5 MB page at once and never read;
  3. both at once.

Meanwhile another client (127.0.0.2) asks for health and a search every half second; the script
counts the ones that failed or took over 5 s, and prints the server's resident memory (VmRSS now,
VmHWM the peak) after each phase.

    python3 tests/hostile/server_load.py [KBTOOLS_BIN] [SECONDS]

Defaults: target/release/kbtools, 15 s a phase. The server runs with its default limits (the
write timeout aside: 600 s, so unread responses stay held for the whole phase). Uses only the
standard library; the bundle (a 5 MB page and a small one) and its index are made in a temporary
folder. Loopback only; needs about 1,400 file descriptors (the soft limit is raised to the hard
one). The same loads at CI's size, with assertions: tests/it/server_limits.rs.
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/kbtools"
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 15.0
SLOW = 1100
UNREAD = 200
PAGE_BYTES = 5 * 1024 * 1024
HALF_HEAD = b"GET /openapi/v2/health HTTP/1.1\r\nHo"
# A check that takes longer than this counts as failed (what a health probe would wait).
CHECK_S = 5.0
# The longest wait for the status lines of all the unread requests.
ANSWERS_S = 120.0


def memory_mib(pid: int) -> tuple[float, float]:
    """VmRSS and VmHWM of `pid`, in MiB."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port: int, source: str, rcvbuf: int | None = None) -> socket.socket:
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((source, 0))
    s.settimeout(CHECK_S)
    s.connect(("127.0.0.1", port))
    return s


def get(port: int, target: str) -> int:
    """The status of `GET target` from another client (127.0.0.2); 0 on a failure or timeout."""
    try:
        s = connect(port, "127.0.0.2")
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
                  .encode())
        data = b""
        deadline = time.monotonic() + CHECK_S
        while time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        return int(data[9:12]) if data.startswith(b"HTTP/1.1 ") else 0
    except (OSError, ValueError):
        return 0


class Checker(threading.Thread):
    """Health and a search from another client every half second until stopped."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.done = 0
        self.failed = 0

    def run(self) -> None:
        search = "/search?query=How%20do%20agents%20read%20related%20files%3F&limit=3"
        while not self.stop.is_set():
            for target in ("/openapi/v2/health", search):
                began = time.monotonic()
                status = get(self.port, target)
                self.done += 1
                if status != 200 or time.monotonic() - began > CHECK_S:
                    self.failed += 1
            self.stop.wait(0.5)


def slowloris(port: int, stop: threading.Event, counts: dict) -> None:
    """`SLOW` half-open connections from 127.0.0.1, each reopened once the server ends it."""
    sel = selectors.DefaultSelector()

    def open_one() -> None:
        try:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            sel.register(s, selectors.EVENT_WRITE)
        except OSError:
            counts["errors"] += 1

    for _ in range(SLOW):
        open_one()
    while not stop.is_set():
        for key, events in sel.select(timeout=0.2):
            s = key.fileobj
            if events & selectors.EVENT_WRITE:
                try:
                    s.send(HALF_HEAD)
                    sel.modify(s, selectors.EVENT_READ)
                except OSError:
                    sel.unregister(s)
                    s.close()
                    counts["errors"] += 1
                    open_one()
                continue
            # Readable: the server answered (a 503 for the client's cap) or closed it.
            try:
                data = s.recv(4096)
                if data.startswith(b"HTTP/1.1 503"):
                    counts["refused"] += 1
                else:
                    counts["closed"] += 1
            except OSError:
                counts["closed"] += 1
            sel.unregister(s)
            s.close()
            counts["renewed"] += 1
            open_one()
    for key in list(sel.get_map().values()):
        key.fileobj.close()


def unread(port: int) -> tuple[list[socket.socket], dict]:
    """`UNREAD` requests for the 5 MB page, sent at once from 127.0.0.3, never read."""
    held = []
    request = (f"GET /files/content?path=pages/big.md HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
               .encode())
    statuses = {}
    for _ in range(UNREAD):
        try:
            s = connect(port, "127.0.0.3", rcvbuf=4096)
            s.sendall(request)
            held.append(s)
        except OSError:
            statuses["not connected"] = statuses.get("not connected", 0) + 1
    # Each status line within one deadline for them all (the calls take turns).
    deadline = time.monotonic() + ANSWERS_S
    for s in held:
        try:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            line = s.recv(12)
            status = line[9:12].decode() if line.startswith(b"HTTP/1.1 ") else "none"
        except OSError:
            status = "none"
        statuses[status] = statuses.get(status, 0) + 1
    return held, statuses


def phase(name: str, port: int, pid: int, slow: bool, unread_clients: bool) -> None:
    checker = Checker(port)
    checker.start()
    stop = threading.Event()
    counts = {"refused": 0, "closed": 0, "renewed": 0, "errors": 0}
    loris = threading.Thread(target=slowloris, args=(port, stop, counts), daemon=True)
    if slow:
        loris.start()
        time.sleep(1)
    held, statuses = ([], {})
    if unread_clients:
        held, statuses = unread(port)
    time.sleep(SECONDS)
    rss, hwm = memory_mib(pid)
    stop.set()
    checker.stop.set()
    checker.join()
    if slow:
        loris.join()
    for s in held:
        s.close()
    parts = []
    if slow:
        parts.append(f"slowloris: {counts['refused']} refused (503) at once, "
                     f"{counts['closed']} closed, {counts['errors']} connect errors")
    if unread_clients:
        parts.append("unread 5 MB pages: " + ", ".join(f"{n} × {k}" for k, n in
                                                         sorted(statuses.items())))
    print(f"{name}: {'; '.join(parts)}; another client: {checker.done - checker.failed} of "
          f"{checker.done} health/search checks answered 200 within {CHECK_S:.0f} s; "
          f"server RSS {rss:.0f} MiB now, peak {hwm:.0f} MiB")
    sys.stdout.flush()
    time.sleep(2)


def main() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    with tempfile.TemporaryDirectory(prefix="kbtools-load-") as work:
        bundle = os.path.join(work, "docs")
        os.makedirs(bundle)
        with open(os.path.join(bundle, "big.md"), "w") as f:
            f.write("# Big\n\n")
            line = "A line of the long page that a client asks for and never reads. " * 4 + "\n"
            while f.tell() < PAGE_BYTES:
                f.write(line)
        with open(os.path.join(bundle, "small.md"), "w") as f:
            f.write("# Small\n\nHow do agents read related files? With read_related.\n")
        index = os.path.join(work, "index")
        subprocess.run([BIN, "index", bundle, "--index", index, "-q"], check=True,
                       stdout=subprocess.DEVNULL)
        port = free_port()
        server = subprocess.Popen(
            [BIN, "serve", "--index", index, "--no-refresh", "-q", "--addr",
             f"127.0.0.1:{port}", "--write-timeout", "600"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            give_up = time.monotonic() + 300
            while get(port, "/openapi/v2/health") != 200:
                if time.monotonic() > give_up or server.poll() is not None:
                    raise RuntimeError("kbtools serve did not answer")
                time.sleep(0.1)
            rss, hwm = memory_mib(server.pid)
            print(f"{BIN}: started, RSS {rss:.0f} MiB; {SECONDS:.0f} s a phase; "
                  f"response of the page: {len(json.dumps('x' * PAGE_BYTES)) // 1024} KiB or more")
            phase(f"1. {SLOW} slowloris connections", port, server.pid, True, False)
            phase(f"2. {UNREAD} unread 5 MB pages", port, server.pid, False, True)
            phase("3. both at once", port, server.pid, True, True)
            rss, hwm = memory_mib(server.pid)
            print(f"server peak RSS over the run: {hwm:.0f} MiB")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
