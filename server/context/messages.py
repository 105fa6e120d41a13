"""A stored message in the shape the pipeline reads: OpenAI's keys plus ``reasoning``, ``reasoning_items``, ``seq``,
``status`` and ``tool_status``, which are never sent as such (``repair.SENT_KEYS`` says what is).

One function for the server's store (``StoredMessage.to_openai``) and the client that reads a transcript back over
the wire (``threadline replay`` and ``eval``), so both size and fold a message the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def pipeline_message(
    seq: int,
    role: str,
    content: str | None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str | None = None,
    name: str | None = None,
    reasoning: str | None = None,
    images: Sequence[tuple[str, str]] = (),
    status: str = "complete",
    reasoning_items: list[dict[str, Any]] | None = None,
    tool_status: str | None = None,
) -> dict[str, Any]:
    """``images`` are ``(mime type, base64 data)`` pairs; with any, the content becomes OpenAI's parts."""
    msg: dict[str, Any] = {"role": role, "content": content}
    if images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
        parts += [{"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}} for mime, data in images]
        msg["content"] = parts
    if tool_calls:
        msg["tool_calls"] = tool_calls
    if tool_call_id is not None:
        msg["tool_call_id"] = tool_call_id
    if name is not None:
        msg["name"] = name
    if reasoning:
        msg["reasoning"] = reasoning
    if reasoning_items:
        msg["reasoning_items"] = reasoning_items
    msg["seq"] = seq
    if status != "complete":
        msg["status"] = status
    if tool_status is not None:
        msg["tool_status"] = tool_status  # how the call ended, for what counts as a failure (B-SUM-10)
    return msg
