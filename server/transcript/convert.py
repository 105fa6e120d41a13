"""Between the wire's message shapes (protocol) and the store's records."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from protocol.messages import Image, OpenAIMessage, OpenAIToolCall, TranscriptItem
from server.errors import InvalidMessage
from server.transcript.records import NewMessage, StoredMessage, ToolStatus

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", re.S)


def from_openai(msg: OpenAIMessage, where: str = "message") -> NewMessage:
    """An imported Chat Completions message as a record; ``reasoning_content``/``reasoning`` become reasoning, and
    a tool message's ``is_error`` its stored status (B-SUM-10: an import keeps the failure flag it has)."""
    text, images = _split_content(msg.content, where)
    if msg.is_error is not None and msg.role != "tool":
        raise InvalidMessage(f"{where}.is_error: only tool messages carry one")
    role = "system" if msg.role == "developer" else msg.role
    calls = [msgspec.to_builtins(c) for c in msg.tool_calls] if msg.tool_calls else None
    return NewMessage(
        role=role,
        content=text,
        tool_calls=calls,
        tool_call_id=msg.tool_call_id,
        name=msg.name,
        reasoning=msg.reasoning_content or msg.reasoning,
        images=images or None,
        tool_status=None if msg.is_error is None else "error" if msg.is_error else "ok",
    )


def _split_content(content: Any, where: str) -> tuple[str | None, list[dict[str, str]]]:
    if content is None or isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[dict[str, str]] = []
    for i, part in enumerate(content):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url" and isinstance(part.get("image_url"), dict):
            url = str(part["image_url"].get("url", ""))
            match = _DATA_URL.match(url)
            if match:
                images.append({"mimeType": match.group(1), "data": match.group(2)})
            else:
                texts.append(f"[image: {url}]")
        else:
            raise InvalidMessage(f"{where}.content[{i}]: unsupported content part {kind!r} (text and image_url only)")
    return "\n".join(texts), images


def to_item(msg: StoredMessage) -> TranscriptItem:
    return TranscriptItem(
        seq=msg.seq,
        role=msg.role,
        content=msg.content,
        created_at=msg.created_at,
        tool_calls=[msgspec.convert(c, OpenAIToolCall) for c in msg.tool_calls] if msg.tool_calls else None,
        tool_call_id=msg.tool_call_id,
        name=msg.name,
        reasoning=msg.reasoning,
        images=[Image(mime_type=i["mimeType"], data=i["data"]) for i in msg.images] if msg.images else None,
        status=msg.status,
        turn_id=msg.turn_id,
        tool_status=(msg.tool_status or tool_status(msg.content or "")) if msg.role == "tool" else None,
    )


def tool_status(content: str) -> ToolStatus:
    """How a stored tool call ended, read from the result's own words: tools write failures as
    ``Tool failed: ...``, refusals as ``Permission denied: ...`` / ``Forbidden: ...``, and an interrupted call as
    ``Tool call interrupted: ...`` (the same words the model reads, so the transcript needs no second field)."""
    if content.startswith(("Permission denied", "Forbidden")):
        return "denied"
    if content.startswith(("Tool failed", "Tool call interrupted")):
        return "error"
    return "ok"
