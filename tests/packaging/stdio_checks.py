#!/usr/bin/env python3
"""Checks of an installed kbtools over stdio, for tests/packaging/ci.sh.

  stdio_checks.py mcp-tools -- COMMAND...   COMMAND starts `kbtools mcp` (through uvx or npx):
      the official MCP SDK (tests/mcp/requirements.txt) sends `initialize`, then `tools/list`,
      and checks that the server is kbtools and lists the six tools.
  stdio_checks.py sigterm -- COMMAND...     COMMAND is the npm launcher running `kbtools mcp`:
      once the server has answered `initialize`, SIGTERM to the launcher alone must end the
      binary it started too (an MCP client stops its server that way), and the launcher must end
      as the binary did.

Prints one line saying what it found; exits 0 when the check passed, 1 when not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import anyio
from mcp import Client, StdioServerParameters

TOOLS = ["expand_graph", "get_file", "list_tree", "read_file", "read_related", "search_files"]
# How long a server may take to build the fixture's index and answer; a deadline against a
# hang, not a speed requirement.
DEADLINE_S = 120


async def mcp_tools(command: list[str]) -> str | None:
    server = StdioServerParameters(command=command[0], args=command[1:])
    with anyio.fail_after(DEADLINE_S):
        async with Client(server, mode="legacy") as client:
            name = client.server_info.name if client.server_info else None
            tools = sorted(t.name for t in (await client.list_tools()).tools)
    if name != "kbtools":
        return f"initialize: the server calls itself {name!r}, not 'kbtools'"
    if tools != TOOLS:
        return f"tools/list: got {tools}, expected {TOOLS}"
    return None


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
        return [int(p) for p in f.read().split()]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def sigterm(command: list[str]) -> str | None:
    launcher = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    binaries: list[int] = []
    try:
        initialize = {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "packaging-check", "version": "1"}},
        }
        launcher.stdin.write((json.dumps(initialize) + "\n").encode())
        launcher.stdin.flush()
        answer = json.loads(launcher.stdout.readline() or "null")
        if not answer or "result" not in answer:
            return f"initialize through the launcher: got {answer!r}"
        binaries = children(launcher.pid)
        if len(binaries) != 1:
            return f"the launcher should run one process, runs {binaries}"
        launcher.send_signal(signal.SIGTERM)
        status = launcher.wait(timeout=DEADLINE_S)
        deadline = time.monotonic() + DEADLINE_S
        while alive(binaries[0]) and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive(binaries[0]):
            return f"SIGTERM to the launcher left the binary (pid {binaries[0]}) running"
        # The launcher ends as the binary ended: by SIGTERM, or with the exit code kbtools
        # chose on it (0 after a clean stop).
        if status not in (-signal.SIGTERM, 0):
            return f"the launcher ended with status {status}, not by SIGTERM nor with 0"
        return None
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        for pid in binaries:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--" or sys.argv[1] not in ("mcp-tools", "sigterm"):
        print(__doc__, file=sys.stderr)
        return 2
    check, command = sys.argv[1], sys.argv[3:]
    try:
        problem = anyio.run(mcp_tools, command) if check == "mcp-tools" else sigterm(command)
    except Exception as error:  # a crash is a failed check, said as such
        problem = f"{type(error).__name__}: {error}"
    if problem:
        print(f"{check}: FAILED: {problem}")
        return 1
    print(f"{check}: ok ({' '.join(os.path.basename(c) for c in command[:1])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
