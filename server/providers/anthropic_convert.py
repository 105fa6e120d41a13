"""The OpenAI-shaped request view as an Anthropic Messages request body. Pure: no I/O.

The Messages API has no ``system`` or ``tool`` role: leading system messages (the prompt, the frozen context, a
summary) become top-level ``system`` blocks; a later one becomes user text. Tool calls are ``tool_use`` blocks of
the assistant turn and results are ``tool_result`` blocks of the next user turn, all of a parallel batch in one.
Roles must alternate, so consecutive same-role messages are merged. Prompt caching is explicit (SPEC B-CACHE-1):
``cache_control`` breakpoints on the last system block and the last message make each call read what the previous
one wrote, because each request repeats the previous one and appends.
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import reasoning_items
from .native import content_text

KIND = "anthropic"
EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4  # the API's limit on cache_control blocks per request
_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", re.S)
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def tool_id(call_id: str) -> str:
    """Anthropic ids match ``^[a-zA-Z0-9_-]+$``; imported transcripts may carry others (the same map both ways)."""
    return _BAD_ID_CHARS.sub("_", call_id) or "call"


def convert_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for spec in tools or ():
        fn = spec.get("function", spec)
        out.append(
            {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    return out


def convert_messages(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system_blocks, messages)`` for the Messages API, roles alternating and starting with ``user``."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    leading = True
    for msg in messages:
        role = msg.get("role")
        if role in ("system", "developer") and leading:
            text = content_text(msg.get("content"))
            if text:
                system.append({"type": "text", "text": text})
            continue
        leading = False
        if role in ("system", "developer"):
            _append(turns, "user", [{"type": "text", "text": f"[system note]\n{content_text(msg.get('content'))}"}])
        elif role == "tool":
            _append(
                turns,
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id(str(msg.get("tool_call_id"))),
                        "content": content_text(msg.get("content")) or "(no output)",
                    }
                ],
            )
        elif role == "assistant":
            blocks = _assistant_blocks(msg)
            if blocks:
                _append(turns, "assistant", blocks)
        else:
            _append(turns, "user", _user_blocks(msg.get("content")))
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": "(conversation continues)"}]})
    return system, turns


def place_cache_breakpoints(system: list[dict[str, Any]], turns: list[dict[str, Any]]) -> None:
    """Mark the last system block and the last block of the last message (2 of the API's 4)."""
    if system:
        system[-1] = {**system[-1], "cache_control": EPHEMERAL}
    if turns and turns[-1]["content"]:
        blocks = turns[-1]["content"]
        # Thinking blocks cannot carry cache_control; the last message is a user turn in practice anyway.
        for i in range(len(blocks) - 1, -1, -1):
            if blocks[i].get("type") not in ("thinking", "redacted_thinking"):
                blocks[i] = {**blocks[i], "cache_control": EPHEMERAL}
                break


def continuation_has_thinking(turns: list[dict[str, Any]]) -> bool:
    """With thinking on, the API requires the assistant turn being continued (the last one with ``tool_use``,
    answered by the final user turn) to start with its thinking block. False when that turn has none: an answer
    from before thinking was on, or from another provider; the request then goes without thinking."""
    if len(turns) < 2 or turns[-1]["role"] != "user" or turns[-2]["role"] != "assistant":
        return True
    last = turns[-2]["content"]
    if not any(b.get("type") == "tool_use" for b in last):
        return True
    return last[0].get("type") in ("thinking", "redacted_thinking")


def _append(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        if role == "user" and blocks[0].get("type") == "tool_result":
            # tool_result blocks must come first in their user turn: results join before any text there
            held = turns[-1]["content"]
            first_text = next((i for i, b in enumerate(held) if b.get("type") != "tool_result"), len(held))
            held[first_text:first_text] = blocks
        else:
            turns[-1]["content"].extend(blocks)
        return
    turns.append({"role": role, "content": list(blocks)})


def _assistant_blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = reasoning_items.items_for(msg, KIND)  # thinking first, unchanged, signatures and all
    text = content_text(msg.get("content"))
    if text:
        blocks.append({"type": "text", "text": text})
    for call in msg.get("tool_calls") or ():
        fn = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_id(str(call.get("id"))),
                "name": fn.get("name", ""),
                "input": _input(fn.get("arguments")),
            }
        )
    if blocks and all(b.get("type") in ("thinking", "redacted_thinking") for b in blocks):
        return []  # thinking alone is no answer the API accepts back (an interrupted answer)
    return blocks


def _input(arguments: Any) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        value = arguments
    return value if isinstance(value, dict) else {"arguments": value}


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str) or content is None:
        return [{"type": "text", "text": content or "(empty message)"}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            match = _DATA_URL.match(url)
            source = (
                {"type": "base64", "media_type": match.group(1), "data": match.group(2)}
                if match
                else {"type": "url", "url": url}
            )
            blocks.append({"type": "image", "source": source})
        elif isinstance(part.get("text"), str) and part["text"]:
            blocks.append({"type": "text", "text": part["text"]})
    return blocks or [{"type": "text", "text": "(empty message)"}]
