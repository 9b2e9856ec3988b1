#!/usr/bin/env python3
"""What MCP sessions cost a `kbtools serve` (issue 38): the server's resident memory (VmRSS)
before and after N `initialize` requests over /mcp, and after K `read_file` calls of a 9 MB page
whose responses the client never reads.

    python3 tests/hostile/mcp_sessions.py [KBTOOLS_BIN] [N] [K]

Defaults: target/release/kbtools, N = 10000, K = 20. Uses only the standard library; the bundle
(one 9 MB page and a small one) and its index are made in a temporary folder. Prints the
figures; loopback only, bounded in count.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/kbtools"
SESSIONS = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
UNREAD = int(sys.argv[3]) if len(sys.argv) > 3 else 20
INIT = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "measure", "version": "1"}},
})
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
# The longest wait for the server to answer, or for one answer: a hang guard, not a speed bound
# (the figures of docs/benchmarks.md were measured on debug builds).
HANG_S = 300


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kbtools-sessions-") as work:
        bundle = os.path.join(work, "docs")
        os.makedirs(bundle)
        with open(os.path.join(bundle, "big.md"), "w") as f:
            f.write("# Big\n\n")
            line = "A line of the long page that a client asks for and never reads. " * 4 + "\n"
            while f.tell() < 9 * 1024 * 1024:
                f.write(line)
        with open(os.path.join(bundle, "small.md"), "w") as f:
            f.write("# Small\n\nA page.\n")
        index = os.path.join(work, "index")
        subprocess.run([BIN, "index", bundle, "--index", index, "-q"], check=True,
                       stdout=subprocess.DEVNULL)
        port = free_port()
        # An older kbtools (before the cap) has no --max-mcp-sessions: measured without it.
        usage = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True).stdout
        cap = ["--max-mcp-sessions", str(SESSIONS + 10)] if "--max-mcp-sessions" in usage else []
        # One client opens them all: no cap of its own (else it ends its own idle sessions).
        if "--max-mcp-sessions-per-client" in usage:
            cap += ["--max-mcp-sessions-per-client", "0"]
        server = subprocess.Popen(
            [BIN, "serve", "--index", index, "--no-refresh", "-q", "--addr", f"127.0.0.1:{port}",
             "--write-timeout", "2", *cap],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            give_up = time.monotonic() + HANG_S
            while True:
                try:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_S)
                    c.request("GET", "/openapi/v2/health")
                    c.getresponse().read()
                    break
                except OSError:
                    if time.monotonic() > give_up:
                        raise
                    time.sleep(0.05)
            time.sleep(0.5)
            start = rss_mib(server.pid)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_S)
            session = ""
            began = time.time()
            for _ in range(SESSIONS):
                conn.request("POST", "/mcp", INIT, HEADERS)
                reply = conn.getresponse()
                reply.read()
                assert reply.status == 200, reply.status
                session = reply.getheader("mcp-session-id") or session
            elapsed = time.time() - began
            time.sleep(1)
            after = rss_mib(server.pid)
            print(f"{SESSIONS} sessions in {elapsed:.1f} s: RSS {start:.1f} MiB -> {after:.1f} MiB, "
                  f"{(after - start) * 1024 * 1024 / SESSIONS / 1024:.1f} KiB a session")
            over = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_S)
            call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "read_file", "arguments": {"path": "pages/big.md", "format": "json"}}})
            # Rounds of K calls whose responses are never read, each round's connections closed
            # by the write timeout: a server that keeps finished responses for the session's life
            # grows by a round's worth each time; one that frees them reuses the memory.
            for round_ in range(3):
                held = []
                for _ in range(UNREAD):
                    s = socket.create_connection(("127.0.0.1", port))
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    body = call.encode()
                    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                            f"Accept: application/json, text/event-stream\r\n"
                            f"Content-Type: application/json\r\n"
                            f"Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n"
                            f"Content-Length: {len(body)}\r\n\r\n").encode()
                    s.sendall(head + body)
                    held.append(s)
                time.sleep(2)
                during = rss_mib(server.pid)
                time.sleep(5)  # the write timeout (2 s) closes the connections that stopped reading
                for s in held:
                    s.close()
                time.sleep(1)
                settled = rss_mib(server.pid)
                print(f"round {round_ + 1}: {UNREAD} unread 9 MB read_file responses: RSS "
                      f"{during:.1f} MiB while held, {settled:.1f} MiB after the write timeout "
                      f"closed them")
            del over
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
