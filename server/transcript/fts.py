"""Turning what a person types into FTS5 queries (B-SEARCH-1).

People type operators (``AND``, ``"exact phrase"``, ``prefix*``) and also stray quotes and brackets. The raw
query is tried first so operators work; when SQLite rejects its syntax, the words are searched as quoted terms,
so ``"unbalanced AND (`` finds messages containing "unbalanced" and "AND" instead of failing.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)


def candidates(query: str) -> list[str]:
    """FTS5 MATCH expressions to try in order; empty when the query holds no searchable word."""
    words = _WORD.findall(query)
    if not words:
        return []
    quoted = " ".join('"' + w.replace('"', '""') + '"' for w in words)
    raw = query.strip()
    return [raw, quoted] if raw != quoted else [quoted]


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def has_cjk(query: str) -> bool:
    return bool(_CJK.search(query))


def snippet_around(text: str, needle: str, width: int = 40) -> str:
    """A short excerpt with the match in brackets, like FTS5's ``snippet()``."""
    at = text.find(needle)
    start, end = max(at - width, 0), at + len(needle) + width
    return (
        ("…" if start else "")
        + text[start:at]
        + f"[{needle}]"
        + text[at + len(needle) : end]
        + ("…" if end < len(text) else "")
    )
