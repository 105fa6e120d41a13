"""Microcompaction of old successful tool outputs (R-MICRO-1, R-MICRO-2, R-MICRO-3).

Before any summary is made, large old tool outputs (file reads, build logs, search hits) before the safe
tail are replaced by a placeholder that says how long they were. Nothing is removed, roles and
``tool_call_id`` stay, so the protocol structure the provider sees is unchanged. Error evidence is never
replaced: it is what keeps the model from repeating a failed step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from protocol.wire_text import PLACEHOLDER_PREFIX, placeholder

__all__ = [
    "ERROR_EVIDENCE",
    "EVIDENCE_WINDOW",
    "evidence_match",
    "PLACEHOLDER_PREFIX",
    "content_text",
    "is_error_evidence",
    "microcompact",
    "placeholder",
]

EVIDENCE_WINDOW = 800

# Error evidence (R-MICRO-2). The article's four markers, then failures generally, as they appear in real
# tool output: interrupted calls, tracebacks, "SomethingError:" / "error:" / "fatal:" lines, compiler
# "file(1,2): error TS..." lines, non-zero exit codes, "not found", failed/failure (but not "0 failed"),
# denials, refusals and timeouts. Only the head and the end of an output are searched
# (EVIDENCE_WINDOW characters each): failures announce themselves there (exit codes, error lines, the last
# traceback line, "3 failed"), while the middle of a successful file read is full of `{:error, reason}` and
# "throw new Error" that are code, not evidence. Within the windows it errs on the side of keeping.
ERROR_EVIDENCE = re.compile(
    r"""
    \bTool\ failed\b | \bInvalid\b | \bPermission\ denied\b | \bForbidden\b
    | \binterrupted\b | <tool_use_error> | \[no\ tool\ result\ recorded
    | Traceback\ \(most\ recent\ call\ last\)
    | ^\s*(?-i:[A-Z]\w*(?:Error|Exception)|error|ERROR|Error|fatal|panic|FAIL(?:ED)?)\b(?:\[\w+\])?:
    | (?:\)|:\d+):\s*error\b
    | \bexit(?:ed)?\ (?:code|status|with\ code)\ *[:=]?\ *-?[1-9]
    | <returncode>\s*-?[1-9]
    | \bnot\ found\b | \bNo\ such\ file\b | \bcannot\ find\b
    | (?<!\b0\ )\bfail(?:ed|ure|ures|s)?\b
    | \bdenied\b | \brefused\b | \btimed\ out\b | \bnot\ allowed\b | \bunauthori[sz]ed\b
    """,
    re.IGNORECASE | re.MULTILINE | re.VERBOSE,
)


# Cheap substring pre-check: most outputs contain none of these, and `in` on a lower-cased string is far
# faster than the many-branch regex above.
_EVIDENCE_WORDS = (
    "fail",
    "invalid",
    "denied",
    "forbidden",
    "interrupt",
    "error",
    "exception",
    "traceback",
    "fatal",
    "panic",
    "exit",
    "returncode",
    "not found",
    "no such file",
    "cannot find",
    "refused",
    "timed out",
    "not allowed",
    "unauthori",
    "no tool result",
)


# Where, relative to one of those words, a match of ERROR_EVIDENCE can start: at the word, or a fixed number of
# characters before it ("Tool failed", "Permission denied", "<tool_use_error>", "<returncode>", "[no tool
# result recorded"). The two line-shaped branches ("^\s*FooError:", "(...): error") start further back, over
# characters of _LEAD only: a line start, a ")" or a ":" within that run.
_WORD_OFFSETS = {
    "fail": (0, 5),
    "denied": (0, 11),
    "error": (10,),
    "exception": (),
    "fatal": (),
    "panic": (),
    "returncode": (1,),
    "no tool result": (1,),
}
_LINE_WORDS = frozenset(("fail", "error", "exception", "fatal", "panic"))
_LEAD = re.compile(r"[\w\s):]*")
_LEAD_MARKS = re.compile(r"\n|[):]")
# The only characters the regex's case folding matches to an ASCII letter that str.lower does not map to one
# (dotless i, long s), or maps to two characters (dotted capital I); the Kelvin sign lowers to "k".
_ODD_CASE = ("\u0131", "\u017f", "\u0130")


def _search(text: str) -> re.Match[str] | None:
    lowered = text.lower()
    found = [(word, at) for word in _EVIDENCE_WORDS if (at := lowered.find(word)) >= 0]
    if not found:
        return None
    if not text.isascii() and any(c in text for c in _ODD_CASE):
        return ERROR_EVIDENCE.search(text)  # ``lowered`` would miss a match or shift positions: search it all
    return _search_candidates(text, lowered, found)


def _search_candidates(text: str, lowered: str, found: list[tuple[str, int]]) -> re.Match[str] | None:
    """ERROR_EVIDENCE.search(text), trying only the positions a match can start at (see _WORD_OFFSETS): its many
    alternatives cost the regex engine about a microsecond per character, and most outputs have few candidates.
    ``match(text, pos)`` sees the text around ``pos`` (``^``, ``\\b``, look-behind) exactly as ``search`` does,
    so the first candidate that matches is the leftmost match, and the same match. ``found``: each evidence word
    in ``lowered`` with its first position."""
    starts: set[int] = set()
    reversed_text: str | None = None
    scanned: dict[int, int] = {}  # a run of _LEAD characters (by its first position) -> how far it was scanned
    for word, at in found:
        offsets = _WORD_OFFSETS.get(word, (0,))
        line_shaped = word in _LINE_WORDS
        while at >= 0:
            starts.update(at - k for k in offsets if at >= k)
            if line_shaped:
                if reversed_text is None:
                    reversed_text = text[::-1]
                lead = _LEAD.match(reversed_text, len(text) - at)
                first = at - (lead.end() - lead.start()) if lead else at
                if first == 0:
                    starts.add(0)
                for mark in _LEAD_MARKS.finditer(text, scanned.get(first, first), at + 1):
                    starts.add(mark.end() if mark.group() == "\n" else mark.start())
                scanned[first] = max(scanned.get(first, first), at + 1)
            at = lowered.find(word, at + 1)
    for pos in sorted(starts):
        match = ERROR_EVIDENCE.match(text, pos)
        if match is not None:
            return match
    return None


def evidence_match(text: str) -> re.Match[str] | None:
    """The first error-evidence match in the head or end window of a tool output (R-MICRO-2), else None.

    Positions of a match in the end window are relative to ``text[-EVIDENCE_WINDOW:]``; use ``match.group()``
    or ``match.string``.
    """
    if len(text) <= 2 * EVIDENCE_WINDOW:
        return _search(text)
    return _search(text[:EVIDENCE_WINDOW]) or _search(text[-EVIDENCE_WINDOW:])


def content_text(content: Any) -> str:
    """The text of a content value: the string, or the text parts (and image URLs) of a part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    pieces = []
    for part in content:
        if isinstance(part, Mapping):
            if isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif isinstance(part.get("image_url"), Mapping):
                pieces.append(str(part["image_url"].get("url", "")))
    return "".join(pieces)


def is_error_evidence(text: str) -> bool:
    """True if a tool output carries failure evidence that must stay in context (R-MICRO-2)."""
    return evidence_match(text) is not None


def _replaceable(msg: Mapping[str, Any]) -> str | None:
    """The placeholder for a compactable tool output, or None if it must stay (R-MICRO-1, R-MICRO-2)."""
    if msg.get("role") != "tool":
        return None  # System messages, summaries, user and assistant messages are never compacted.
    text = content_text(msg.get("content"))
    if text.startswith(PLACEHOLDER_PREFIX) or is_error_evidence(text):
        return None
    replacement = placeholder(len(text))
    # A placeholder longer than the output would grow the request, not shrink it.
    return replacement if len(replacement) < len(text) else None


def microcompact(msgs: Sequence[Mapping[str, Any]], tail_start: int) -> tuple[list[dict[str, Any]], int]:
    """Replace old successful tool outputs before ``tail_start`` with placeholders (R-MICRO-1, R-MICRO-2).

    Returns the new list (same length, same roles and ``tool_call_id`` values, fresh dicts where changed,
    the input never mutated) and the number of outputs replaced.
    """
    out: list[dict[str, Any]] = []
    count = 0
    for i, msg in enumerate(msgs):
        replacement = _replaceable(msg) if i < tail_start else None
        if replacement is None:
            out.append(dict(msg))
            continue
        compacted = dict(msg)
        compacted["content"] = replacement
        out.append(compacted)
        count += 1
    return out, count
