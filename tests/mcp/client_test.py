#!/usr/bin/env python3
"""An independent MCP client test of `kbtools mcp`, with the official Python SDK (`mcp`).

Starts `kbtools mcp fixtures/focowiki-docs --index <tmpdir> -q` over stdio with the SDK's stdio
client, and `kbtools serve fixtures/focowiki-docs --token <token>` with the SDK's Streamable HTTP
client on its `/mcp` route (the bearer token in the client's headers), once per protocol
revision each:

* 2025-11-25: the `initialize` handshake (`Client(mode="legacy")`);
* 2026-07-28: the handshake-less revision, negotiated with `server/discover`
  (`Client(mode="auto")`, which probes discover first; the suite checks that it landed there).

Each revision runs the whole suite: server identity and capabilities, the six tool definitions
(input schemas checked against the Params structs in src/tools/*.rs, annotations), a realistic
call of each tool in text (default) and json format (json validated against the contract schemas
in tests/contract/six-tools.schema.json, and against structuredContent), read_file partial reads
(type=search / type=extract), and error cases (unknown tool, invalid arguments, not found).

Every check counts once; a failure is printed and the run goes on. The last line is
`N passed, N failed`; the exit code is 1 when any check failed.

Usage: client_test.py [KBTOOLS_BIN]   (or KBTOOLS_BIN=...; default target/debug/kbtools)
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import anyio
import httpx2
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "focowiki-docs"
SCHEMA_FILE = ROOT / "tests" / "contract" / "six-tools.schema.json"
SCHEMA_URI = "urn:kbtools:six-tools.schema.json"

QUESTION = "How do agents read related files?"
TOOLS = ["search_files", "read_file", "list_tree", "get_file", "read_related", "expand_graph"]

# The contract fields each tool's inputSchema must offer (the Params structs of src/tools/*.rs),
# and the ones it must require.
CONTRACT_FIELDS: dict[str, set[str]] = {
    "search_files": {
        "query",
        "mode",
        "graphDepth",
        "graphFanout",
        "rerank",
        "cursor",
        "limit",
        "scope",
        "fileKind",
        "okfStatus",
        "okfTrustTier",
        "okfFreshness",
        "rerankTopK",
        "rerankScoreThreshold",
    },
    "read_file": {"fileId", "path", "type", "query", "contextLines", "maxMatches", "segments"},
    "list_tree": {"parentPath", "cursor", "limit"},
    "get_file": {"fileId"},
    "read_related": {"fileId", "cursor", "limit"},
    "expand_graph": {"fileId", "depth", "fanout", "cursor", "limit"},
}
REQUIRED_FIELDS: dict[str, set[str]] = {
    "search_files": {"query"},
    "read_file": set(),
    "list_tree": set(),
    "get_file": {"fileId"},
    "read_related": {"fileId"},
    "expand_graph": {"fileId"},
}
ANNOTATIONS = {
    "read_only_hint": True,
    "destructive_hint": False,
    "idempotent_hint": True,
    "open_world_hint": False,
}

# Fallbacks, used only when an earlier step failed, so later checks still run.
FALLBACK_PAGE = "pages/en/README.md"

# Hang guards, not speed bounds (a debug build on a loaded 2-core machine is slow): the longest
# wait for one call, for a server to start (it builds the index first), and for one protocol
# revision's whole suite.
CALL_TIMEOUT = 300.0
START_TIMEOUT = 600.0
SUITE_TIMEOUT = 1800.0
# render::DEFAULT_TEXT_BUDGET: a text result is at most about this many characters.
TEXT_BUDGET = 20_000
TEXT_BUDGET_CEILING = TEXT_BUDGET * 105 // 100


# ---------------------------------------------------------------------------------------------
# Bookkeeping


class Results:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.failures: list[str] = []

    def record(self, name: str, problem: str | None) -> bool:
        if problem is None:
            self.passed += 1
            print(f"  ok    {name}", flush=True)
            return True
        self.failed += 1
        self.failures.append(name)
        print(f"  FAIL  {name}", flush=True)
        for line in problem.rstrip().splitlines():
            print(f"        | {line}", flush=True)
        return False

    def check(self, name: str, fn: Callable[[], Any]) -> bool:
        """Runs `fn`: None or an empty string/list passes; a message or a list of problems fails,
        and so does an exception."""
        try:
            problem = fn()
        except Exception as e:  # noqa: BLE001 - every failure is one counted check
            problem = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
        if problem is None or problem == [] or problem == "":
            return self.record(name, None)
        if isinstance(problem, list):
            problem = "\n".join(str(p) for p in problem)
        return self.record(name, str(problem))


def short(value: Any, n: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= n else text[:n] + f"... ({len(text)} chars)"


def describe(e: BaseException) -> str:
    """An exception as one line per leaf (task groups wrap the real cause)."""
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe(sub) for sub in e.exceptions)
    return f"{type(e).__name__}: {e}"


def requires(**inputs: Any) -> str | None:
    """A failure when an input an assertion needs is missing (an earlier step failed)."""
    missing = [name for name, value in inputs.items() if value is None]
    return f"not checked: no {', '.join(missing)} (an earlier step failed)" if missing else None


# ---------------------------------------------------------------------------------------------
# Contract schemas


SCHEMA_DOC: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
# The whole file is one resource, so a `$ref` anywhere in it resolves within the file.
REGISTRY = Registry().with_resource(
    SCHEMA_URI, Resource.from_contents(SCHEMA_DOC, default_specification=DRAFT202012)
)


def operation_of(tool: str, args: dict[str, Any]) -> str:
    return {
        "list_tree": "listKnowledgeBaseTree",
        "get_file": "getFileById",
        "read_file": "getFileContentByPath" if "path" in args else "getFileContentById",
        "read_related": "listRelatedFiles",
        "expand_graph": "expandGraph",
        "search_files": "searchGeneratedFiles",
    }[tool]


def contract_validator(operation: str, status: int) -> Draft202012Validator:
    op = SCHEMA_DOC[operation]
    if status == 200:
        pointer = f"/{operation}/response/schema"
    else:
        errors = op["errors"]
        # A status the operation does not declare uses the shared Error schema (any of them).
        key = str(status) if str(status) in errors else next(iter(errors))
        pointer = f"/{operation}/errors/{key}/schema"
    return Draft202012Validator({"$ref": f"{SCHEMA_URI}#{pointer}"}, registry=REGISTRY)


def violations(validator: Draft202012Validator, instance: Any) -> list[str]:
    out = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        where = "/" + "/".join(str(p) for p in error.absolute_path)
        out.append(f"{where}: {error.message[:300]}")
    return out[:20]


# ---------------------------------------------------------------------------------------------
# Calls


def text_of(result: Any) -> str:
    texts = [c.text for c in (result.content or []) if getattr(c, "type", None) == "text"]
    return "".join(texts)


async def call(client: Client, tool: str, args: dict[str, Any]) -> Any:
    with anyio.fail_after(CALL_TIMEOUT):
        return await client.call_tool(tool, args)


def not_json(text: str) -> str | None:
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if isinstance(parsed, (dict, list)):
        return f"text format returned JSON: {short(text, 200)}"
    return None


class Suite:
    """One revision's run over one SDK client: every check is named `[<revision>] <check>`."""

    def __init__(self, results: Results, revision: str, tools: dict[str, Any]) -> None:
        self.results = results
        self.revision = revision
        self.tools = tools  # tool name → advertised inputSchema (filled after tools/list)
        self.client: Client | None = None

    def check(self, name: str, fn: Callable[[], Any]) -> bool:
        return self.results.check(f"[{self.revision}] {name}", fn)

    def fail(self, name: str, problem: str) -> None:
        self.results.record(f"[{self.revision}] {name}", problem)

    def args_match_schema(self, tool: str, args: dict[str, Any]) -> str | None:
        """What a strict client does before sending: the arguments must fit the advertised
        inputSchema."""
        schema = self.tools.get(tool)
        if schema is None:
            return f"no inputSchema advertised for {tool}"
        problems = violations(Draft202012Validator(schema), args)
        return (
            "\n".join([f"arguments {short(args)} rejected by {tool} inputSchema:"] + problems)
            if problems
            else None
        )

    async def call_text(
        self, label: str, tool: str, args: dict[str, Any], must_contain: list[str] = ()
    ) -> str | None:
        """Calls `tool` in the default (text) format: isError false, non-empty, not JSON."""
        name = f"{label} text"
        self.check(
            f"{label}: arguments fit the advertised inputSchema", lambda: self.args_match_schema(tool, args)
        )
        try:
            result = await call(self.client, tool, args)
        except Exception as e:  # noqa: BLE001
            self.fail(name, f"call raised {describe(e)}")
            return None
        text = text_of(result)

        def verdict() -> list[str]:
            problems = []
            if result.is_error:
                problems.append(f"isError true: {short(text)}")
            if not text.strip():
                problems.append("empty text content")
            if (p := not_json(text)) is not None:
                problems.append(p)
            if len(text) > TEXT_BUDGET_CEILING:
                problems.append(f"{len(text)} characters, over the default text budget ({TEXT_BUDGET} + 5%)")
            for needle in must_contain:
                if needle not in text:
                    problems.append(f"text does not mention {needle!r}: {short(text, 200)}")
            return problems

        self.check(name, verdict)
        return text

    async def call_json(self, label: str, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """Calls `tool` with format json: the text parses, validates against the contract response
        schema, and equals structuredContent. Returns the parsed output."""
        args = {**args, "format": "json"}
        name = f"{label} json"
        try:
            result = await call(self.client, tool, args)
        except Exception as e:  # noqa: BLE001
            self.fail(name, f"call raised {describe(e)}")
            return None
        text = text_of(result)
        parsed: dict[str, Any] | None = None
        try:
            parsed = json.loads(text)
        except ValueError as e:
            self.fail(f"{name}: text parses as JSON", f"{e}: {short(text)}")
            return None
        operation = operation_of(tool, args)

        def verdict() -> list[str]:
            problems = []
            if result.is_error:
                problems.append(f"isError true: {short(text)}")
            problems += [
                f"{operation} 200: {v}" for v in violations(contract_validator(operation, 200), parsed)
            ]
            if result.structured_content != parsed:
                problems.append(
                    f"structuredContent differs from the text JSON: {short(result.structured_content, 200)}"
                )
            return problems

        self.check(f"{name} (contract {operation}, structuredContent)", verdict)
        return parsed

    async def call_error(
        self, label: str, tool: str, args: dict[str, Any], code: str, status: int, fmt: str
    ) -> None:
        """A tool error: isError true; text `失败: <CODE>...`, or json the contract error envelope."""
        if fmt == "json":
            args = {**args, "format": "json"}
        name = f"{label} → {code} ({fmt})"
        try:
            result = await call(self.client, tool, args)
        except Exception as e:  # noqa: BLE001
            self.fail(name, f"expected a tool error result, the call raised {describe(e)}")
            return
        text = text_of(result)

        def verdict() -> list[str]:
            problems = []
            if not result.is_error:
                problems.append(f"isError is {result.is_error!r}, expected true; text: {short(text)}")
            if fmt == "text":
                prefix = f"失败: {code}"
                if not text.startswith(prefix):
                    problems.append(f"text does not start with {prefix!r}: {short(text)}")
                elif text[len(prefix) : len(prefix) + 1] not in ("", " ", "\n", ":"):
                    problems.append(f"code not followed by a separator: {short(text)}")
                return problems
            try:
                envelope = json.loads(text)
            except ValueError as e:
                return problems + [f"json error text does not parse: {e}: {short(text)}"]
            got = (envelope.get("error") or {}).get("code") if isinstance(envelope, dict) else None
            if got != code:
                problems.append(f"error.code {got!r}, expected {code!r}: {short(text)}")
            http = (envelope.get("error") or {}).get("httpStatus") if isinstance(envelope, dict) else None
            if http != status:
                problems.append(f"error.httpStatus {http!r}, expected {status}")
            operation = operation_of(tool, args)
            problems += [
                f"{operation} {status}: {v}"
                for v in violations(contract_validator(operation, status), envelope)
            ]
            return problems

        self.check(name, verdict)


# ---------------------------------------------------------------------------------------------
# The suite


def server_params(binary: str, index_dir: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=binary,
        args=["mcp", str(FIXTURE), "--index", index_dir, "-q"],
        cwd=str(ROOT),
    )


def check_tool_definitions(suite: Suite, listed: list[Any]) -> None:
    names = [t.name for t in listed]
    suite.check(
        "tools/list returns exactly the six tools",
        lambda: None if sorted(names) == sorted(TOOLS) and len(names) == 6 else f"got {names}",
    )
    by_name = {t.name: t for t in listed}
    for tool in TOOLS:
        t = by_name.get(tool)
        if t is None:
            suite.fail(f"{tool}: definition", "tool missing from tools/list")
            continue
        schema = t.input_schema or {}
        props = schema.get("properties") or {}
        suite.check(
            f"{tool}: description",
            lambda t=t: None if (t.description or "").strip() else "empty description",
        )

        def schema_shape(schema=schema) -> list[str]:
            problems = []
            if schema.get("type") != "object":
                problems.append(f"inputSchema type {schema.get('type')!r}, expected 'object'")
            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as e:
                problems.append(f"inputSchema is not a valid JSON Schema: {e.message}")
            if schema.get("additionalProperties") is not False:
                problems.append("additionalProperties is not false (the server rejects unknown fields)")
            return problems

        suite.check(f"{tool}: inputSchema is a valid object schema", schema_shape)

        def format_prop(props=props) -> str | None:
            fmt = props.get("format")
            if not isinstance(fmt, dict):
                return "no `format` property"
            if sorted(fmt.get("enum") or []) != ["json", "text"]:
                return f"format enum {fmt.get('enum')!r}, expected text/json"
            return None

        suite.check(f"{tool}: `format` property (enum text/json)", format_prop)

        def contract_props(tool=tool, props=props) -> str | None:
            missing = CONTRACT_FIELDS[tool] - set(props)
            extra = set(props) - CONTRACT_FIELDS[tool] - {"format"}
            problems = []
            if missing:
                problems.append(f"missing properties {sorted(missing)}")
            if extra:
                problems.append(f"unexpected properties {sorted(extra)}")
            return "; ".join(problems) or None

        suite.check(f"{tool}: contract fields as in src/tools/{tool}.rs Params", contract_props)

        def required(tool=tool, schema=schema) -> str | None:
            got = set(schema.get("required") or [])
            return (
                None
                if got == REQUIRED_FIELDS[tool]
                else f"required {sorted(got)}, expected {sorted(REQUIRED_FIELDS[tool])}"
            )

        suite.check(f"{tool}: required fields", required)

        def annotations(t=t) -> str | None:
            a = t.annotations
            if a is None:
                return "no annotations"
            wrong = {k: getattr(a, k, None) for k, v in ANNOTATIONS.items() if getattr(a, k, None) is not v}
            return f"wrong hints {wrong}, expected {ANNOTATIONS}" if wrong else None

        suite.check(f"{tool}: annotations readOnly/!destructive/idempotent/closed-world", annotations)


async def run_tool_calls(suite: Suite) -> None:
    # search_files: the user's question.
    search_args = {"query": QUESTION}
    text = await suite.call_text("search_files(question)", "search_files", search_args)
    found = await suite.call_json("search_files(question)", "search_files", search_args)
    items = (found or {}).get("items") or []
    suite.check(
        "search_files(question) finds candidates",
        lambda: None if items else f"no items: {short(found)}",
    )
    top = items[0] if items else {}
    page_path = top.get("path") or FALLBACK_PAGE
    suite.check(
        "search_files text mentions the top candidate's path",
        lambda: requires(text=text, path=top.get("path"))
        or (None if top["path"] in text else f"{top['path']!r} not in {short(text, 200)}"),
    )

    # read_file: the top candidate, by path (text and json) and by fileId (json).
    read_args = {"path": page_path}
    read_text = await suite.call_text(f"read_file(path={page_path})", "read_file", read_args)
    by_path = await suite.call_json(f"read_file(path={page_path})", "read_file", read_args)
    content = (by_path or {}).get("content") or ""
    file_id = ((by_path or {}).get("file") or {}).get("fileId") or top.get("fileId") or page_path
    body_line = next((l for l in content.splitlines() if len(l.strip()) >= 20), None)
    suite.check(
        "read_file text (type=read) carries the file content",
        lambda: requires(text=read_text, content_line=body_line)
        or (None if body_line in read_text else f"line {body_line!r} not in {short(read_text, 200)}"),
    )
    by_id = await suite.call_json("read_file(fileId)", "read_file", {"fileId": file_id})
    suite.check(
        "read_file by fileId and by path return the same content",
        lambda: (
            None
            if by_id is not None and by_id.get("content") == content and content
            else "contents differ or are empty"
        ),
    )

    # read_file partial reads.
    await run_partial_reads(suite, page_path, content)

    # list_tree: the root.
    await suite.call_text("list_tree(root)", "list_tree", {"parentPath": ""}, must_contain=["index.md"])
    tree = await suite.call_json("list_tree(root)", "list_tree", {"parentPath": ""})
    tree_items = (tree or {}).get("items") or []
    root_file = next((i for i in tree_items if i.get("entryType") == "file" and i.get("fileId")), None)
    suite.check(
        "list_tree(root) lists a file with a fileId",
        lambda: None if root_file else f"no file entry: {short(tree_items)}",
    )
    root_file_id = (root_file or {}).get("fileId") or "index.md"
    root_path = (root_file or {}).get("path") or "index.md"

    # get_file: a fileId from the tree, and one from search.
    await suite.call_text(
        "get_file(fileId from list_tree)", "get_file", {"fileId": root_file_id}, must_contain=[root_path]
    )
    detail = await suite.call_json("get_file(fileId from list_tree)", "get_file", {"fileId": root_file_id})
    suite.check(
        "get_file returns the listed file",
        lambda: (
            None if ((detail or {}).get("file") or {}).get("path") == root_path else f"path {short(detail)}"
        ),
    )
    await suite.call_json("get_file(fileId from search)", "get_file", {"fileId": file_id})

    # read_related / expand_graph: from a page with relations (the fixture's graph records them).
    seed = await pick_related_seed(suite, items, file_id)
    related = await suite.call_json("read_related(seed)", "read_related", {"fileId": seed, "limit": 10})
    rel_items = (related or {}).get("items") or []
    suite.check(
        "read_related(seed) lists related files",
        lambda: None if rel_items else f"no related items for {seed}: {short(related)}",
    )
    rel_path = rel_items[0]["path"] if rel_items else None
    await suite.call_text(
        "read_related(seed)",
        "read_related",
        {"fileId": seed, "limit": 10},
        must_contain=[rel_path] if rel_path else [],
    )
    expand_args = {"fileId": seed, "depth": 2, "fanout": 5}
    expanded = await suite.call_json("expand_graph(seed, depth 2)", "expand_graph", expand_args)
    rels = (expanded or {}).get("relationships") or []
    suite.check(
        "expand_graph(seed) returns relationships",
        lambda: None if rels else f"no relationships: {short(expanded)}",
    )
    await suite.call_text("expand_graph(seed, depth 2)", "expand_graph", expand_args, must_contain=[seed])

    # Paging as a client pages: limit 1, then the nextCursor it returned.
    first = await suite.call_json("read_related(seed, limit 1)", "read_related", {"fileId": seed, "limit": 1})
    cursor = (first or {}).get("nextCursor")
    second = None
    if cursor:
        second = await suite.call_json(
            "read_related(seed, limit 1) next page",
            "read_related",
            {"fileId": seed, "limit": 1, "cursor": cursor},
        )

    def paged() -> str | None:
        if len(rel_items) < 2:
            return f"the seed {seed} needs at least 2 related files to page; has {len(rel_items)}"
        if not cursor:
            return f"no nextCursor on page 1 of {len(rel_items)} related files: {short(first)}"
        if second is None:
            return "page 2 failed"
        got = [i.get("fileId") for i in (first.get("items") or []) + (second.get("items") or [])]
        want = [i.get("fileId") for i in rel_items[:2]]
        return None if got == want else f"pages 1+2 give {got}, the unpaged list starts {want}"

    suite.check("read_related paging: nextCursor leads to the next item", paged)


async def pick_related_seed(suite: Suite, items: list[dict[str, Any]], fallback: str) -> str:
    """A source page from the search results with at least two relationships in its graph
    context (so that read_related can page), else one with any."""
    for least in (2, 1):
        for item in items:
            ctx = item.get("graphContext") or {}
            if item.get("sourceFileId") and len(ctx.get("relationships") or []) >= least:
                return item["fileId"]
    for item in items:
        if item.get("sourceFileId"):
            return item["fileId"]
    return fallback


async def run_partial_reads(suite: Suite, page_path: str, content: str) -> None:
    lines = content.split("\n")
    # A word of the page that occurs on some line: the longest word of its first long line.
    word = "graph"
    body = lines
    if lines and lines[0] == "---" and "---" in lines[1:]:
        body = lines[lines.index("---", 1) + 1 :]  # past the frontmatter
    for line in body:
        if line.startswith("#"):
            continue
        words = [w.strip(".,:;()[]*`\"'") for w in line.split()]
        words = [w for w in words if w.isalpha() and len(w) >= 6]
        if words:
            word = max(words, key=len)
            break
    search_args = {"path": page_path, "type": "search", "query": word}
    text = await suite.call_text(f"read_file(type=search, query={word!r})", "read_file", search_args)
    suite.check(
        "read_file type=search text has [match_1] Lx-y snippets",
        lambda: requires(text=text)
        or (None if "[match_1] L" in text and word.lower() in text.lower() else f"{short(text, 300)}"),
    )
    out = await suite.call_json(f"read_file(type=search, query={word!r})", "read_file", search_args)
    suite.check(
        "read_file type=search json content is snippets, not the whole file",
        lambda: requires(output=out)
        or (
            None
            if (out.get("content") or "").startswith("[match_1] L") and out.get("content") != content
            else f"content: {short(out.get('content'), 300)}"
        ),
    )

    end = min(3, len(lines))
    segments = [{"label": "intro", "start": 1, "end": end}]
    extract_args = {"path": page_path, "type": "extract", "segments": segments}
    text = await suite.call_text("read_file(type=extract, L1-3)", "read_file", extract_args)
    expected = f"[intro] L1-{end}\n" + "\n".join(lines[:end])
    suite.check(
        "read_file type=extract text has the [intro] block with lines 1-3",
        lambda: requires(text=text)
        or (None if expected in text else f"expected {expected!r} in {short(text, 300)}"),
    )
    out = await suite.call_json("read_file(type=extract, L1-3)", "read_file", extract_args)
    suite.check(
        "read_file type=extract json content is exactly the segment",
        lambda: requires(output=out)
        or (
            None
            if (out.get("content") or "").rstrip("\n") == expected
            else f"content: {short(out.get('content'), 300)}"
        ),
    )


async def run_error_cases(suite: Suite) -> None:
    # Unknown tool: a JSON-RPC error, not a tool result.
    def expect_invalid_params(outcome: Any) -> str | None:
        if isinstance(outcome, MCPError):
            return (
                None
                if outcome.code == -32602
                else f"MCPError code {outcome.code}, expected -32602: {outcome.message}"
            )
        if isinstance(outcome, BaseException):
            return f"raised {type(outcome).__name__}: {outcome}, expected MCPError -32602"
        return f"no JSON-RPC error; got a result: isError={outcome.is_error} {short(text_of(outcome))}"

    try:
        outcome: Any = await call(suite.client, "no_such_tool", {"query": QUESTION})
    except Exception as e:  # noqa: BLE001
        outcome = e
    suite.check("unknown tool → JSON-RPC error -32602", lambda: expect_invalid_params(outcome))

    # Invalid arguments: a tool result with isError.
    cases = [
        ("search_files(query 'x')", "search_files", {"query": "x"}, "VALIDATION_ERROR", 422),
        ("search_files(limit 0)", "search_files", {"query": QUESTION, "limit": 0}, "VALIDATION_ERROR", 422),
        (
            "search_files(unknown field)",
            "search_files",
            {"query": QUESTION, "bogus": 1},
            "VALIDATION_ERROR",
            422,
        ),
        ("list_tree(limit 0)", "list_tree", {"limit": 0}, "VALIDATION_ERROR", 422),
        (
            "read_file(fileId and path)",
            "read_file",
            {"fileId": "x", "path": "index.md"},
            "VALIDATION_ERROR",
            422,
        ),
        ("read_file(path ../secret.md)", "read_file", {"path": "../secret.md"}, "VALIDATION_ERROR", 422),
        (
            "expand_graph(depth 3)",
            "expand_graph",
            {"fileId": FALLBACK_PAGE, "depth": 3},
            "VALIDATION_ERROR",
            422,
        ),
        (
            "read_file(fileId does not exist)",
            "read_file",
            {"fileId": "source-file-00000000-0000-0000-0000-000000000000"},
            "NOT_FOUND",
            404,
        ),
        (
            "read_file(path pages/does-not-exist.md)",
            "read_file",
            {"path": "pages/does-not-exist.md"},
            "NOT_FOUND",
            404,
        ),
        ("get_file(fileId does not exist)", "get_file", {"fileId": "nope"}, "NOT_FOUND", 404),
        ("read_related(index.md)", "read_related", {"fileId": "index.md"}, "CONFLICT", 409),
    ]
    for label, tool, args, code, status in cases:
        for fmt in ("text", "json"):
            await suite.call_error(label, tool, args, code, status, fmt)

    # An invalid `format` itself.
    await suite.call_error(
        "list_tree(format 'xml')", "list_tree", {"format": "xml"}, "VALIDATION_ERROR", 422, "text"
    )

    # The server is still answering after the errors.
    try:
        after = await call(suite.client, "list_tree", {"format": "json"})
        alive = None if not after.is_error else f"isError after errors: {short(text_of(after))}"
    except Exception as e:  # noqa: BLE001
        alive = f"{type(e).__name__}: {e}"
    suite.check("server still answers after the error cases", lambda: alive)


HTTP_TOKEN = "kbtools-mcp-client-test-token"


class HttpServer:
    """`kbtools serve` of the fixture on a free loopback port, with a bearer token."""

    def __init__(self, binary: str, index_dir: str) -> None:
        self.process = subprocess.Popen(
            [binary, "serve", str(FIXTURE), "--index", index_dir, "--addr", "127.0.0.1:0",
             "--token", HTTP_TOKEN],
            cwd=str(ROOT),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = ""
        deadline = time.monotonic() + START_TIMEOUT
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if "listening on http://" in line:
                address = line.split("listening on http://", 1)[1].split()[0]
                self.url = f"http://{address}/mcp"
                break
            if time.monotonic() > deadline:
                break
        if not self.url:
            self.stop()
            raise RuntimeError("kbtools serve did not say where it listens")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def run_revision(results: Results, binary: str, revision: str, transport: str) -> None:
    print(f"== protocol revision {revision} over {transport}", flush=True)
    mode = "legacy" if revision == "2025-11-25" else "auto"
    label = revision if transport == "stdio" else f"{revision} http"
    suite = Suite(results, label, {})
    with tempfile.TemporaryDirectory(prefix="kbtools-mcp-index-") as index_dir:
        server = None
        if transport == "stdio":
            target: Any = server_params(binary, index_dir)
        else:
            server = await anyio.to_thread.run_sync(HttpServer, binary, index_dir)
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {HTTP_TOKEN}"}, timeout=CALL_TIMEOUT)
            target = streamable_http_client(server.url, http_client=http)
        client = Client(target, mode=mode, read_timeout_seconds=CALL_TIMEOUT, cache=None)
        connected = False
        # What the SDK's transport logs at WARNING and above (a refused session close is one).
        warnings = WarningsSeen()
        transport_log = logging.getLogger("mcp.client.streamable_http")
        transport_log.addHandler(warnings)
        try:
            with anyio.fail_after(SUITE_TIMEOUT):
                async with client:
                    connected = True
                    suite.client = client
                    await run_suite(suite, client, revision, mode)
        except Exception as e:  # noqa: BLE001 - one counted failure, then the next revision
            if not connected:
                suite.fail("connect", describe(e))
                suite.fail("remaining checks", "not run: no connection")
            else:
                suite.fail("suite", f"aborted: {describe(e)}\n{traceback.format_exc(limit=5)}")
        finally:
            transport_log.removeHandler(warnings)
            if server is not None:
                server.stop()
        if transport == "http" and connected:
            suite.check(
                "the SDK's transport closes its session with no warning",
                lambda: warnings.seen,
            )


class WarningsSeen(logging.Handler):
    """Collects the records of WARNING and above of the loggers it is added to."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(f"{record.name}: {record.getMessage()}")


def run_http_front_door(results: Results, binary: str) -> None:
    """Over HTTP, `/mcp` sits behind the server's front door: no token, no answer; a foreign
    Origin (DNS rebinding) is refused."""
    name = "http front door"
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "front-door", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with tempfile.TemporaryDirectory(prefix="kbtools-mcp-index-") as index_dir:
        server = HttpServer(binary, index_dir)
        try:
            with httpx2.Client(timeout=CALL_TIMEOUT) as http:
                bare = http.post(server.url, json=init, headers=headers)
                results.check(
                    f"{name}: no bearer token → 401",
                    lambda: None if bare.status_code == 401 else f"status {bare.status_code}",
                )
                authed = dict(headers, Authorization=f"Bearer {HTTP_TOKEN}")
                foreign = http.post(server.url, json=init, headers=dict(authed, Origin="http://attacker.example"))
                results.check(
                    f"{name}: foreign Origin → 403",
                    lambda: None if foreign.status_code == 403 else f"status {foreign.status_code}",
                )
                local = http.post(server.url, json=init, headers=dict(authed, Origin="http://localhost:3000"))
                results.check(
                    f"{name}: local Origin with the token → 200 and a session",
                    lambda: (
                        None
                        if local.status_code == 200 and local.headers.get("mcp-session-id")
                        else f"status {local.status_code}, session {local.headers.get('mcp-session-id')!r}"
                    ),
                )
                session = local.headers.get("mcp-session-id", "")
                ended = http.delete(server.url, headers=dict(authed, **{"Mcp-Session-Id": session}))
                results.check(
                    f"{name}: DELETE ends the session (200 or 204, what clients expect)",
                    lambda: None if ended.status_code in (200, 204) else f"status {ended.status_code}",
                )
                again = http.delete(server.url, headers=dict(authed, **{"Mcp-Session-Id": session}))
                results.check(
                    f"{name}: DELETE of an ended session → 404",
                    lambda: None if again.status_code == 404 else f"status {again.status_code}",
                )
                for label, body, code in (
                    ("malformed JSON", b"{not json", -32700),
                    ("a batch array", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
                    ("an object id", b'{"jsonrpc":"2.0","id":{},"method":"ping"}', -32600),
                ):
                    bad = http.post(server.url, content=body, headers=authed)

                    def jsonrpc_400(bad: Any = bad, code: int = code) -> str | None:
                        if bad.status_code != 400:
                            return f"status {bad.status_code}"
                        error = bad.json().get("error") or {}
                        return None if error.get("code") == code else f"body {bad.text[:200]}"

                    results.check(f"{name}: {label} → 400 and JSON-RPC error {code}", jsonrpc_400)
                gone = http.post(
                    server.url,
                    json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    headers=dict(authed, **{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}),
                )
                results.check(
                    f"{name}: a request in the ended session → 404",
                    lambda: None if gone.status_code == 404 else f"status {gone.status_code}",
                )
        finally:
            server.stop()


async def run_suite(suite: Suite, client: Client, revision: str, mode: str) -> None:
    session = client.session

    def negotiated() -> str | None:
        if client.protocol_version != revision:
            return f"negotiated {client.protocol_version!r}, expected {revision!r}"
        if revision == "2025-11-25" and session.initialize_result is None:
            return "no InitializeResult"
        if revision == "2026-07-28":
            if session.initialize_result is not None:
                return "the client fell back to the initialize handshake"
            d = session.discover_result
            if d is None or revision not in d.supported_versions:
                return f"server/discover result {d!r} lacks {revision}"
        return None

    what = "initialize handshake" if mode == "legacy" else "server/discover, no initialize"
    suite.check(f"{what} negotiates {revision}", negotiated)
    suite.check(
        "server name is kbtools",
        lambda: (
            None
            if client.server_info is not None and client.server_info.name == "kbtools"
            else f"server_info {client.server_info!r}"
        ),
    )
    suite.check(
        "tools capability present",
        lambda: (
            None
            if client.server_capabilities.tools is not None
            else f"capabilities {client.server_capabilities!r}"
        ),
    )
    suite.check(
        "instructions present",
        lambda: None if (client.instructions or "").strip() else "no instructions",
    )

    try:
        with anyio.fail_after(CALL_TIMEOUT):
            listed = (await client.list_tools()).tools
    except Exception as e:  # noqa: BLE001
        suite.fail("tools/list", f"{type(e).__name__}: {e}")
        listed = []
    suite.tools = {t.name: t.input_schema for t in listed}
    check_tool_definitions(suite, listed)
    await run_tool_calls(suite)
    await run_error_cases(suite)


# ---------------------------------------------------------------------------------------------
# The process itself, below the SDK: what goes over stdout, and how the server ends.


def raw_messages(revision: str) -> list[dict[str, Any]]:
    """A whole session of `revision` as a client writes it: negotiation, tools/list, one call."""
    call = {"name": "list_tree", "arguments": {"parentPath": "", "format": "json"}}
    if revision == "2025-11-25":
        return [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": revision,
                    "capabilities": {},
                    "clientInfo": {"name": "kbtools-raw-test", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
        ]
    meta = {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientInfo": {"name": "kbtools-raw-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    }
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": dict(meta)},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": dict(meta)},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {**call, **meta}},
    ]


def run_raw_session(results: Results, binary: str, revision: str) -> None:
    """Writes a whole session to the server's stdin, closes it, and checks stdout, stderr and the
    exit status (`-q`: nothing on stderr; end of input: exit 0)."""
    name = f"[{revision}] raw stdio"
    with tempfile.TemporaryDirectory(prefix="kbtools-mcp-index-") as index_dir:
        stdin = "".join(json.dumps(m) + "\n" for m in raw_messages(revision))
        try:
            done = subprocess.run(
                [binary, "mcp", str(FIXTURE), "--index", index_dir, "-q"],
                input=stdin.encode(),
                capture_output=True,
                timeout=START_TIMEOUT,
                cwd=ROOT,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            results.record(f"{name}: session", describe(e))
            results.record(f"{name}: exit", "not run")
            return
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")

    def protocol_only() -> list[str]:
        problems, by_id = [], {}
        for line in stdout.splitlines():
            try:
                message = json.loads(line)
            except ValueError:
                problems.append(f"stdout line is not JSON-RPC: {short(line, 200)}")
                continue
            if message.get("jsonrpc") != "2.0":
                problems.append(f"not JSON-RPC 2.0: {short(message, 200)}")
            if "id" in message:
                by_id[message["id"]] = message
        for i in (1, 2, 3):
            if i not in by_id:
                problems.append(f"no response to request {i}")
            elif "error" in by_id[i]:
                problems.append(f"request {i} failed: {short(by_id[i]['error'], 300)}")
        if not problems:
            tools = [t.get("name") for t in by_id[2]["result"].get("tools", [])]
            if sorted(tools) != sorted(TOOLS):
                problems.append(f"tools/list gave {tools}")
            result = by_id[3]["result"]
            if result.get("isError") or not isinstance(result.get("structuredContent"), dict):
                problems.append(f"tools/call list_tree: {short(result, 300)}")
        return problems

    results.check(f"{name}: stdout carries only JSON-RPC, one answer per request", protocol_only)
    results.check(
        f"{name}: end of input → exit 0, nothing on stderr (-q)",
        lambda: (
            None
            if done.returncode == 0 and not stderr.strip()
            else f"exit status {done.returncode}, stderr: {short(stderr, 300)!r}"
        ),
    )


def run_discover_only(results: Results, binary: str) -> None:
    """A handshake-less client that only asks `server/discover` and closes: the server answers
    with the versions it speaks (both revisions) and ends normally."""
    name = "[2026-07-28] discover only"
    meta = raw_messages("2026-07-28")[0]
    with tempfile.TemporaryDirectory(prefix="kbtools-mcp-index-") as index_dir:
        try:
            done = subprocess.run(
                [binary, "mcp", str(FIXTURE), "--index", index_dir, "-q"],
                input=(json.dumps(meta) + "\n").encode(),
                capture_output=True,
                timeout=START_TIMEOUT,
                cwd=ROOT,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            results.record(f"{name}: session", describe(e))
            return

    def versions() -> str | None:
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            try:
                message = json.loads(line)
            except ValueError:
                return f"stdout line is not JSON-RPC: {short(line, 200)}"
            if message.get("id") == 1:
                supported = message.get("result", {}).get("supportedVersions", [])
                missing = {"2025-11-25", "2026-07-28"} - set(supported)
                return f"supportedVersions {supported} lacks {sorted(missing)}" if missing else None
        return "no answer to server/discover"

    stderr = done.stderr.decode("utf-8", "replace")
    results.check(f"{name}: supportedVersions has both revisions", versions)
    results.check(
        f"{name}: close after discover → exit 0, nothing on stderr (-q)",
        lambda: (
            None
            if done.returncode == 0 and not stderr.strip()
            else f"exit status {done.returncode}, stderr: {short(stderr, 300)!r}"
        ),
    )


async def main_async(binary: str) -> Results:
    results = Results()
    for revision in ("2025-11-25", "2026-07-28"):
        for transport in ("stdio", "http"):
            try:
                await run_revision(results, binary, revision, transport)
            except Exception as e:  # noqa: BLE001
                results.record(
                    f"[{revision} {transport}] suite", f"crashed: {describe(e)}\n{traceback.format_exc(limit=5)}"
                )
        run_raw_session(results, binary, revision)
    run_discover_only(results, binary)
    try:
        run_http_front_door(results, binary)
    except Exception as e:  # noqa: BLE001
        results.record("http front door", f"crashed: {describe(e)}")
    return results


def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("KBTOOLS_BIN", "target/debug/kbtools")
    path = Path(binary)
    if not path.is_absolute():
        path = (ROOT / path) if (ROOT / path).exists() else Path.cwd() / path
    started = time.monotonic()
    print(f"kbtools MCP client test: {path} (mcp SDK), fixture {FIXTURE.relative_to(ROOT)}", flush=True)
    if not path.exists():
        print(f"  FAIL  binary not found: {path}", flush=True)
        print("0 passed, 1 failed")
        return 1
    results = anyio.run(main_async, str(path))
    elapsed = time.monotonic() - started
    if results.failures:
        print(f"failed checks ({len(results.failures)}):")
        for name in results.failures:
            print(f"  - {name}")
    print(f"({elapsed:.1f}s)")
    print(f"{results.passed} passed, {results.failed} failed")
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
