"""Schemathesis hooks for the kbtools HTTP server (tests/http/schemathesis.sh loads them).

They shape only *positive* cases (requests that must succeed), and only by rules that OpenAPI
parameter schemas cannot express but that the served document states in prose:

* a `cursor` is valid only when the same operation issued it for the same other parameters (an
  opaque token); a made-up one is a 422 by contract, so a positive case carries no cursor;
* `rerankTopK` and `rerankScoreThreshold` need `rerank=true`, and `rerankTopK >= limit`
  (a dependency between parameters);
* paths are in Unicode NFC, at most 2,048 UTF-16 code units, with no segment that percent-decodes
  to a traversal, a separator, a control character or invalid UTF-8;
* a search `query` holds at least two grapheme clusters after NFKC and white-space collapsing.

Negative cases are never touched, and no check is changed or skipped here.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote_to_bytes

import schemathesis

_HEX_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _is_positive(case) -> bool:
    meta = getattr(case, "meta", None)
    return meta is not None and meta.generation.mode.is_positive


def _forbidden(c: str) -> bool:
    # kbtools `is_forbidden_path_char`: Cc, and the bidi controls.
    code = ord(c)
    return (
        unicodedata.category(c) == "Cc"
        or 0x202A <= code <= 0x202E
        or 0x2066 <= code <= 0x2069
    )


def _decode_once(segment: str) -> str | None:
    """kbtools `percent_decode_once`: `%XX` escapes once, bad escapes kept; None if not UTF-8."""
    raw = bytearray()
    i = 0
    data = segment.encode("utf-8")
    while i < len(data):
        escape = data[i : i + 3].decode("latin-1")
        if data[i : i + 1] == b"%" and i + 2 < len(data) and _HEX_ESCAPE.match(escape):
            raw += unquote_to_bytes(escape)
            i += 3
            continue
        raw += data[i : i + 1]
        i += 1
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _canonical_beyond_pattern(path: str) -> bool:
    """The parts of kbtools `check_canonical` a pattern cannot say."""
    if len(path.encode("utf-16-le")) // 2 > 2048:
        return False
    if not unicodedata.is_normalized("NFC", path):
        return False
    for segment in path.split("/"):
        decoded = segment
        for _ in range(4):
            following = _decode_once(decoded)
            if following is None:
                return False
            if following == decoded:
                break
            if (
                following in (".", "..")
                or "/" in following
                or "\\" in following
                or any(_forbidden(c) for c in following)
            ):
                return False
            decoded = following
    return True


# Characters that may join the character before them into one grapheme cluster, or that
# `unicodedata` may not know: a query is counted only when none of them is present.
_JOINING_CATEGORIES = {"Mn", "Mc", "Me", "Cf", "Cs", "Co", "Cn", "Sk"}


def _surely_two_graphemes(query: str) -> bool:
    normalized = " ".join(unicodedata.normalize("NFKC", query).split())
    if len(normalized) < 2 or len(normalized) > 512 or len(normalized.encode("utf-8")) > 2048:
        return False
    for c in normalized:
        code = ord(c)
        if unicodedata.category(c) in _JOINING_CATEGORIES:
            return False
        # Hangul jamo, regional indicators, emoji modifiers, and letters of the Prepend class.
        if (
            0x1100 <= code <= 0x11FF
            or 0xA960 <= code <= 0xA97F
            or 0xD7B0 <= code <= 0xD7FF
            or 0x1F1E6 <= code <= 0x1F1FF
            or 0x1F3FB <= code <= 0x1F3FF
            or code in (0x0D4E, 0x111C2, 0x111C3, 0x1193F, 0x11941, 0x11A3A, 0x11D46, 0x11F02)
            or 0x11A84 <= code <= 0x11A89
        ):
            return False
    return True


def _truthy(value) -> bool:
    return value is True or value == "true"


def _as_int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


@schemathesis.hook
def map_case(ctx, case):
    if not _is_positive(case) or not isinstance(case.query, dict):
        return case
    query = case.query
    if query.get("cursor") not in (None, ""):
        del query["cursor"]
    if "rerankTopK" in query or "rerankScoreThreshold" in query:
        if not _truthy(query.get("rerank")):
            query.pop("rerankTopK", None)
            query.pop("rerankScoreThreshold", None)
        elif "rerankTopK" in query:
            limit = _as_int(query.get("limit"), 10)
            if _as_int(query["rerankTopK"], 0) < limit:
                query["rerankTopK"] = limit
    return case


@schemathesis.hook
def filter_case(ctx, case):
    if not _is_positive(case) or not isinstance(case.query, dict):
        return True
    for key in ("path", "parentPath"):
        value = case.query.get(key)
        if isinstance(value, str) and value and not _canonical_beyond_pattern(value):
            return False
    if "/search" in case.operation.path and isinstance(case.query.get("query"), str):
        return _surely_two_graphemes(case.query["query"])
    return True
