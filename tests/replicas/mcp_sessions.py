"""MCP clients through a load balancer (run by tests/replicas/replicas.py in tests/mcp's
virtualenv): `URL` and `N`; connects N times one after another with the official Python SDK in
each protocol revision kbtools serves, with a new connection per request, and lists the tools
and makes three tool calls. In the 2025-11-25 revision (`initialize`, `Mcp-Session-Id`) each
client fails unless every request of its session reaches the replica that initialized it; the
handshake-less revision has no session, and any replica answers. Exit 0 when all pass."""

from __future__ import annotations

import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

# The longest wait for one answer: a hang guard, not a speed bound (CI runs a debug build on a
# loaded 2-core machine).
HANG_S = 300


async def session(url: str, mode: str) -> str:
    # A new connection per request, as clients behind proxies and connection churn make them:
    # nothing but the session id ties a session's requests to its replica.
    limits = httpx2.Limits(max_keepalive_connections=0)
    async with httpx2.AsyncClient(timeout=HANG_S, limits=limits) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode,
                          read_timeout_seconds=HANG_S, cache=None) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "search_files" in tools, tools
            found = await client.call_tool("search_files", {"query": "graph relations", "limit": 2})
            assert not found.is_error, found
            tree = await client.call_tool("list_tree", {"parentPath": "pages"})
            assert not tree.is_error, tree
            read = await client.call_tool("read_file", {"path": "index.md"})
            assert not read.is_error, read
            return f"{len(tools)} tools, 3 calls"


async def main(url: str, count: int) -> int:
    failed = 0
    for mode, label in (("legacy", "2025-11-25 session"), ("auto", "handshake-less client")):
        for i in range(count):
            try:
                print(f"{label} {i + 1}: {await session(url, mode)}", flush=True)
            except Exception as e:  # noqa: BLE001 - counted, then the next one
                failed += 1
                print(f"{label} {i + 1} FAILED: {e!r}", flush=True)
    print(f"{2 * count - failed} clients passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1], int(sys.argv[2])))
