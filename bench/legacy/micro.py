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

PLACEHOLDER_PREFIX = "[old tool output compacted: "
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
    "fail", "invalid", "denied", "forbidden", "interrupt", "error", "exception", "traceback", "fatal",
    "panic", "exit", "returncode", "not found", "no such file", "cannot find", "refused", "timed out",
    "not allowed", "unauthori", "no tool result",
)


def _search(text: str) -> re.Match[str] | None:
    lowered = text.lower()
    if not any(word in lowered for word in _EVIDENCE_WORDS):
        return None
    return ERROR_EVIDENCE.search(text)


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


def placeholder(original_chars: int) -> str:
    """The exact replacement text of R-MICRO-1."""
    return f"{PLACEHOLDER_PREFIX}{original_chars} characters]"


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
