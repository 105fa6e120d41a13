"""A strict double of Anthropic Messages (``POST /v1/messages``, streamed), rejecting what the real API rejects
with its words, and simulating its prompt cache at the request's ``cache_control`` breakpoints.

Script items: ``content``, ``thinking`` (streamed as thinking_delta, then a signature_delta), ``tool_calls``
([{id, name, arguments: dict or a raw string}]), ``ptl`` (answer "prompt is too long"), ``error`` ({status, type, message, headers?, in_stream?}), ``stop_reason``,
``chunks``/``chunk_delay`` (stream the text in that many pieces, waiting between them). Unscripted: ``Echo: <text>``.

Cache: the request is flattened into blocks (tools, system, then each message's content); a breakpoint caches
the prefix ending at its block. A request reads the longest remembered prefix ending at or up to 20 blocks before
one of its breakpoints (``cache_read_input_tokens``) and writes the rest up to its last breakpoint
(``cache_creation_input_tokens``); ``input_tokens`` is what is left.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from typing import Any

from tests.fakes.native_fake import NativeFake, Rejection, _raw_arguments, digest, echo, paced, tokens_of

SECRET = b"fake-anthropic-signing-key"
LOOKBACK = 20
THINKING_TYPES = ("thinking", "redacted_thinking")


def sign(thinking: str) -> str:
    return base64.b64encode(hmac.new(SECRET, thinking.encode(), hashlib.sha256).digest()).decode()


def invalid(message: str, status: int = 400, type: str = "invalid_request_error") -> Rejection:
    return Rejection(status, {"type": "error", "error": {"type": type, "message": message}})


class FakeAnthropic(NativeFake):
    path = "/messages"

    def __init__(self, api_key: str | None = None, context_window: int | None = None) -> None:
        super().__init__(api_key, context_window)
        self._cache: set[bytes] = set()

    def forget(self) -> None:
        self._cache = set()

    # -- validation -------------------------------------------------------------------------------------
    def check(self, headers: dict[str, str], body: Any) -> None:
        if self.api_key is not None and headers.get("x-api-key") != self.api_key:
            raise invalid("invalid x-api-key", 401, "authentication_error")
        if "anthropic-version" not in headers:
            raise invalid("anthropic-version: header is required")
        if "max_tokens" not in body:
            raise invalid("max_tokens: Field required")
        thinking = body.get("thinking")
        if thinking and thinking.get("budget_tokens", 0) >= body["max_tokens"]:
            raise invalid("`max_tokens` must be greater than `thinking.budget_tokens`")
        messages = body.get("messages") or []
        if not messages:
            raise invalid("messages: at least one message is required")
        for i, msg in enumerate(messages):
            if msg.get("role") not in ("user", "assistant"):
                raise invalid(
                    f'Unexpected role "{msg.get("role")}". The Messages API accepts a top-level `system` '
                    f'parameter, not "system" as an input message role.'
                )
            if i == 0 and msg["role"] != "user":
                raise invalid('messages: first message must use the "user" role')
            if i and messages[i - 1]["role"] == msg["role"]:
                raise invalid(
                    f'messages: roles must alternate between "user" and "assistant", but found multiple '
                    f'"{msg["role"]}" roles in a row'
                )
            for j, block in enumerate(_blocks(msg)):
                if block.get("type") == "text" and not block.get("text"):
                    raise invalid(f"messages.{i}.content.{j}: text content blocks must be non-empty")
        _check_tool_pairing(messages)
        if not body.get("tools") and any(
            b.get("type") in ("tool_use", "tool_result") for msg in messages for b in _blocks(msg)
        ):
            raise invalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
        marks = sum(1 for block in _flat(body) if "cache_control" in block)
        if marks > 4:
            raise invalid(f"A maximum of 4 blocks with cache_control may be provided. Found {marks}.")
        if thinking and thinking.get("type") == "enabled":
            _check_thinking(messages)
        for i, msg in enumerate(messages):
            for j, block in enumerate(_blocks(msg)):
                if block.get("type") == "thinking" and block.get("signature") != sign(block.get("thinking", "")):
                    raise invalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
        if self.context_window is not None:
            total = sum(tokens_of(b) for b in _flat(body))
            if total > self.context_window:
                raise invalid(f"prompt is too long: {total} tokens > {self.context_window} maximum")

    # -- the answer ---------------------------------------------------------------------------------------
    def answer(self, body: dict[str, Any], item: dict[str, Any], record: dict[str, Any]) -> list[tuple[str, dict]]:
        if item.get("ptl"):
            total = sum(tokens_of(b) for b in _flat(body))
            raise invalid(f"prompt is too long: {total} tokens > {max(1, total - 1)} maximum")
        error = item.get("error")
        if error and not error.get("in_stream"):
            raise Rejection(
                error["status"],
                {
                    "type": "error",
                    "error": {"type": error.get("type", "api_error"), "message": error.get("message", "")},
                },
                error.get("headers"),
            )
        usage = self._cache_usage(body)
        record["usage"] = usage
        msg_id = f"msg_{uuid.uuid4().hex[:24]}"
        events: list[tuple[str, dict]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": body["model"],
                        "content": [],
                        "stop_reason": None,
                        "usage": {**usage, "output_tokens": 1},
                    },
                },
            )
        ]
        if error:
            return [
                *events,
                (
                    "error",
                    {
                        "type": "error",
                        "error": {
                            "type": error.get("type", "overloaded_error"),
                            "message": error.get("message", "Overloaded"),
                        },
                    },
                ),
            ]
        index = 0
        if item.get("thinking") and body.get("thinking"):
            text = item["thinking"]
            events += [
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                    },
                ),
                *[_delta(index, {"type": "thinking_delta", "thinking": part}) for part in _split(text)],
                _delta(index, {"type": "signature_delta", "signature": sign(text)}),
                _stop(index),
            ]
            index += 1
        content = item.get("content", "" if item.get("tool_calls") else echo(openai_messages(body)))
        if content:
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                ),
                *paced(
                    [
                        _delta(index, {"type": "text_delta", "text": part})
                        for part in _split(content, item.get("chunks", 3))
                    ],
                    item.get("chunk_delay"),
                ),
                _stop(index),
            ]
            index += 1
        for call in item.get("tool_calls") or ():
            raw = _raw_arguments(call.get("arguments", {}))
            events += [
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {
                            "type": "tool_use",
                            "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:20]}",
                            "name": call["name"],
                            "input": {},
                        },
                    },
                ),
                *[_delta(index, {"type": "input_json_delta", "partial_json": part}) for part in _split(raw)],
                _stop(index),
            ]
            index += 1
        stop = item.get("stop_reason") or ("tool_use" if item.get("tool_calls") else "end_turn")
        return [
            *events,
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 7 + index},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]

    def _cache_usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = _flat(body)
        clean = [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]
        sizes = [tokens_of(b) for b in clean]
        prefix: list[bytes] = []
        for k in range(len(clean)):
            prefix.append(digest([prefix[-1].hex() if prefix else "", clean[k]]))
        marks = [k for k, b in enumerate(blocks) if "cache_control" in b]
        read_end = 0
        for mark in marks:
            for end in range(mark, max(-1, mark - LOOKBACK - 1), -1):
                if prefix[end] in self._cache:
                    read_end = max(read_end, end + 1)
                    break
        write_end = max(read_end, marks[-1] + 1) if marks else read_end
        for mark in marks:
            self._cache.add(prefix[mark])
        read, write = sum(sizes[:read_end]), sum(sizes[read_end:write_end])
        return {
            "input_tokens": sum(sizes) - read - write,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }


def _blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    content = msg.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _flat(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request in cache order: tools, then system blocks, then every message's blocks (role attached)."""
    system = body.get("system") or []
    system = [{"type": "text", "text": system}] if isinstance(system, str) else system
    out = [dict(t) for t in body.get("tools") or []] + [dict(b) for b in system]
    for msg in body.get("messages") or []:
        out += [{**b, "_role": msg.get("role")} for b in _blocks(msg)]
    return out


def _check_tool_pairing(messages: list[dict[str, Any]]) -> None:
    for i, msg in enumerate(messages):
        asked = [b["id"] for b in _blocks(msg) if b.get("type") == "tool_use"] if msg["role"] == "assistant" else []
        if asked:
            following = _blocks(messages[i + 1]) if i + 1 < len(messages) else []
            answered = {b.get("tool_use_id") for b in following if b.get("type") == "tool_result"}
            missing = [a for a in asked if a not in answered]
            if missing:
                raise invalid(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    f"`tool_result` block in the next message."
                )
        if msg["role"] == "user":
            before = messages[i - 1] if i else {"content": []}
            known = {b.get("id") for b in _blocks(before) if b.get("type") == "tool_use"}
            for j, block in enumerate(_blocks(msg)):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in known:
                    raise invalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                        f"`tool_use` block in the previous message."
                    )


def _check_thinking(messages: list[dict[str, Any]]) -> None:
    """With thinking on, the assistant turn a tool_result continues must start with its thinking block."""
    if len(messages) < 2 or messages[-1]["role"] != "user":
        return
    if not any(b.get("type") == "tool_result" for b in _blocks(messages[-1])):
        return
    last = _blocks(messages[-2])
    if last and last[0].get("type") not in THINKING_TYPES:
        raise invalid(
            f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, "
            f"but found `{last[0].get('type')}`. When `thinking` is enabled, a final `assistant` message "
            "must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
            "blocks). We recommend you include thinking blocks from previous turns. To avoid this "
            "requirement, disable `thinking`."
        )


def _delta(index: int, delta: dict[str, Any]) -> tuple[str, dict]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> tuple[str, dict]:
    return "content_block_stop", {"type": "content_block_stop", "index": index}


def _split(text: str, parts: int = 3) -> list[str]:
    step = max(1, -(-len(text) // parts))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


def openai_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request as Chat Completions messages, for tests that read what the model saw whatever the kind: each
    system block a system message, each ``tool_result`` a tool message, each user text or image a user message,
    each assistant turn one assistant message (text, ``tool_use`` as tool_calls). Thinking and cache marks go."""
    system = body.get("system") or []
    out: list[dict[str, Any]] = [
        {"role": "system", "content": b["text"]}
        for b in ([{"type": "text", "text": system}] if isinstance(system, str) else system)
    ]
    for msg in body.get("messages") or []:
        blocks = _blocks(msg)
        if msg.get("role") == "assistant":
            answer: dict[str, Any] = {
                "role": "assistant",
                "content": "".join(b["text"] for b in blocks if b.get("type") == "text"),
            }
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}))},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            out.append({**answer, "tool_calls": calls} if calls else answer)
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                content = b.get("content")
                text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": text})
            elif b.get("type") == "text":
                out.append({"role": "user", "content": b["text"]})
            else:
                out.append({"role": "user", "content": [{k: v for k, v in b.items() if k != "cache_control"}]})
    return out
