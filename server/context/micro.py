"""Microcompaction of old successful tool outputs (R-MICRO-1, R-MICRO-2, R-MICRO-3).

Before any summary is made, large old tool outputs (file reads, build logs, search hits) before the safe
tail are replaced by a placeholder that says how long they were. Nothing is removed, roles and
``tool_call_id`` stay, so the protocol structure the provider sees is unchanged. A failure is never replaced:
it is what keeps the model from repeating a failed step. What a failure is, is decided once, for the summary and
for this, by ``failures.is_failure`` (B-SUM-10): a call that failed, not an output that mentions an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocol.wire_text import PLACEHOLDER_PREFIX, placeholder

from .failures import is_failure

__all__ = [
    "PLACEHOLDER_PREFIX",
    "content_text",
    "is_failed_result",
    "microcompact",
    "placeholder",
]


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


def is_failed_result(msg: Mapping[str, Any], tool: str | None = None, status: str | None = None) -> bool:
    """True if a tool message is the result of a failed call (B-SUM-10), so it stays in context (R-MICRO-2).
    ``tool``: the called tool's name; ``status``: its stored status when ``msg`` no longer carries
    ``tool_status`` (a repaired message keeps only the sent keys)."""
    name = tool if tool is not None else msg.get("name") if isinstance(msg.get("name"), str) else None
    return is_failure(content_text(msg.get("content")), name, status or msg.get("tool_status"))


def _replaceable(msg: Mapping[str, Any], tool: str | None = None, status: str | None = None) -> str | None:
    """The placeholder for a compactable tool output, or None if it must stay (R-MICRO-1, R-MICRO-2). ``tool``
    and ``status`` as for ``is_failed_result``."""
    if msg.get("role") != "tool":
        return None  # System messages, summaries, user and assistant messages are never compacted.
    text = content_text(msg.get("content"))
    if text.startswith(PLACEHOLDER_PREFIX) or is_failed_result(msg, tool, status):
        return None
    replacement = placeholder(len(text))
    # A placeholder longer than the output would grow the request, not shrink it.
    return replacement if len(replacement) < len(text) else None


def microcompact(
    msgs: Sequence[Mapping[str, Any]], tail_start: int, statuses: Sequence[str | None] | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Replace old successful tool outputs before ``tail_start`` with placeholders (R-MICRO-1, R-MICRO-2).

    Returns the new list (same length, same roles and ``tool_call_id`` values, fresh dicts where changed,
    the input never mutated) and the number of outputs replaced. A result's tool is the call it answers in the
    latest assistant message before it; its status is its ``tool_status`` or, when given, ``statuses[i]``.
    """
    out: list[dict[str, Any]] = []
    count = 0
    names: dict[str, str] = {}
    for i, msg in enumerate(msgs):
        if msg.get("tool_calls"):
            names = {str(c.get("id")): str((c.get("function") or {}).get("name", "")) for c in msg["tool_calls"]}
        status = statuses[i] if statuses is not None else None
        tool = names.get(str(msg.get("tool_call_id")))
        replacement = _replaceable(msg, tool, status) if i < tail_start else None
        if replacement is None:
            out.append(dict(msg))
            continue
        compacted = dict(msg)
        compacted["content"] = replacement
        out.append(compacted)
        count += 1
    return out, count
