"""A stored conversation as ACP ``session/update`` updates (``session/load`` replays it before answering).

User messages become ``user_message_chunk`` (text and images), answers ``agent_thought_chunk`` then
``agent_message_chunk``, each tool call a ``tool_call`` and its stored result a ``tool_call_update`` with the
final status. System messages (the frozen context) are not part of the conversation a client shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from acp.schema import AgentThoughtChunk, ImageContentBlock, TextContentBlock, UserMessageChunk

from server.acp import tools
from server.acp.updates import agent_text, tool_call_end, tool_call_start
from server.acp.wrapping import without_context
from server.transcript import StoredMessage

UNANSWERED = "No result was stored for this tool call."


def history_updates(messages: Iterable[StoredMessage], cwd: Path) -> Iterator[Any]:
    open_calls: dict[str, tuple[str, Any]] = {}
    for msg in messages:
        if msg.role == "user":
            yield from _user(msg)
        elif msg.role == "assistant":
            if msg.reasoning:
                yield AgentThoughtChunk(
                    session_update="agent_thought_chunk", content=TextContentBlock(type="text", text=msg.reasoning)
                )
            if msg.content:
                yield agent_text(msg.content)
            for call in msg.tool_calls or []:
                name, args = _call(call)
                open_calls[call["id"]] = (name, args)
                yield tool_call_start(call["id"], name, args, None, cwd)
        elif msg.role == "tool" and msg.tool_call_id:
            name, args = open_calls.pop(msg.tool_call_id, (msg.name or "", None))
            text = msg.content or ""
            status = tools.status_of(msg.tool_status, text)  # as the loop knew it; older rows by their text
            diff = tools.edit_diff(name, args, cwd, None, None) if status == "completed" else None
            yield tool_call_end(msg.tool_call_id, status, text, diff)
    for call_id in open_calls:  # a call whose result was never stored (a crash mid-call) ends failed
        yield tool_call_end(call_id, "failed", UNANSWERED, None)


def _user(msg: StoredMessage) -> Iterator[Any]:
    text = without_context(msg.content or "")  # avante's context line is the client's, not the user's words
    if text:
        yield UserMessageChunk(session_update="user_message_chunk", content=TextContentBlock(type="text", text=text))
    for image in msg.images or []:
        yield UserMessageChunk(
            session_update="user_message_chunk",
            content=ImageContentBlock(type="image", data=image["data"], mime_type=image["mimeType"]),
        )


def _call(call: dict[str, Any]) -> tuple[str, Any]:
    fn = call.get("function") or {}
    raw = fn.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        args = raw
    return str(fn.get("name", "")), args
