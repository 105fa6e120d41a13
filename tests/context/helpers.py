"""Message builders for the context tests: OpenAI-shaped dicts and text sized with our own estimator."""

from __future__ import annotations

import json
from typing import Any

from server.context import estimate_message_tokens, estimate_text_tokens

# Plain English whose estimate is exactly the R-TOK-1 floor, ceil(chars / 4), for any prefix.
_FILLER = "the quick brown fox jumps over the lazy dog. "


def text_of_tokens(n: int, filler: str = _FILLER) -> str:
    """Text whose estimate is exactly ``n`` tokens."""
    text = (filler * (4 * n // len(filler) + 1))[: 4 * n]
    assert estimate_text_tokens(text) == n, (n, estimate_text_tokens(text))
    return text


def system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str | None = None, *calls: dict[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = list(calls)
    return msg


def call(call_id: str, name: str = "read_file", **args: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args or {"path": "a.py"})},
    }


def tool(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def sized(msg: dict[str, Any], n: int) -> dict[str, Any]:
    """``msg`` with filler appended to its content so the whole message estimates to exactly ``n`` tokens."""
    prefix = msg.get("content") or ""
    fixed = estimate_message_tokens({**msg, "content": ""})
    filler = _FILLER * (4 * n // len(_FILLER) + 2)
    length = max(0, 4 * (n - fixed) - len(prefix))
    for candidate in sorted(range(max(0, length - 8), length + 9), key=lambda x: abs(x - length)):
        out = {**msg, "content": prefix + filler[:candidate]}
        if estimate_message_tokens(out) == n:
            return out
    raise AssertionError(f"cannot size {prefix!r} to {n} tokens")
