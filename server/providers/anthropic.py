"""Anthropic Messages (``POST /v1/messages``, streamed) behind the ChatProvider interface.

The view is converted at this edge (anthropic_convert.py); the stream's content blocks are assembled here:
text is the answer, thinking is reasoning (shown as such, never as text), and each complete thinking block, with
its signature, is kept as a reasoning item so the tool-use continuation can send it back unchanged.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from . import reasoning_items
from .anthropic_convert import (
    KIND,
    continuation_has_thinking,
    convert_messages,
    convert_tools,
    place_cache_breakpoints,
)
from .base import ChatResult, ReasoningDelta, StreamEvent, TextDelta, ToolCall, Usage
from .errors import ProviderError
from .native import NativeProvider
from .sse import TooLarge

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
# stop_reason in Chat Completions' finish_reason words, which the rest of Threadline reads.
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "pause_turn": "stop",
    "refusal": "content_filter",
}


class AnthropicProvider(NativeProvider):
    path = "/messages"
    kind = KIND

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        max_tokens: int | None = None,
        thinking_budget_tokens: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(base_url, api_key, model, **options)
        self.thinking_budget = thinking_budget_tokens
        # The API requires max_tokens, above any thinking budget.
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS + (thinking_budget_tokens or 0)

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, cache_key: str | None
    ) -> dict[str, Any]:
        system, turns = convert_messages(messages)
        place_cache_breakpoints(system, turns)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": turns, "stream": True}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = convert_tools(tools)
            body["tool_choice"] = {"type": "auto"}
        if self.thinking_budget and continuation_has_thinking(turns):
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        return body

    def new_assembler(self) -> MessageAssembler:
        return MessageAssembler(self.max_answer_chars)

    def stream_error(self, event: dict[str, Any], partial: ChatResult | None) -> ProviderError | None:
        if event.get("type") != "error":
            return None
        return self.error_from_payload(event, partial)


class MessageAssembler:
    """Folds Messages stream events (message_start, content_block_*, message_delta, message_stop) into a result."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.usage_in: dict[str, Any] = {}
        self.output_tokens = 0
        self.stop_reason: str | None = None
        self.finished = False

    @property
    def produced(self) -> bool:
        return any(b.get("text") or b.get("thinking") or b.get("type") == "tool_use" for b in self.blocks.values())

    def add_event(self, event: dict[str, Any]) -> list[StreamEvent]:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.usage_in = dict(message.get("usage") or {})
            self.output_tokens = _int(self.usage_in.get("output_tokens"))
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            if block.get("type") == "tool_use":
                block["input"] = {}
            self.blocks[_int(event.get("index"))] = block
        elif kind == "content_block_delta":
            return self._take_delta(_int(event.get("index")), event.get("delta") or {})
        elif kind == "message_delta":
            self.stop_reason = (event.get("delta") or {}).get("stop_reason") or self.stop_reason
            usage = event.get("usage") or {}
            if "output_tokens" in usage:
                self.output_tokens = _int(usage["output_tokens"])
            for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
                if usage.get(key) is not None:  # newer servers repeat the input figures here
                    self.usage_in[key] = usage[key]
        elif kind == "message_stop":
            self.finished = True
        return []

    def _take_delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        piece = ""
        out: list[StreamEvent] = []
        if kind == "text_delta":
            piece = str(delta.get("text", ""))
            block["text"] = block.get("text", "") + piece
            out.append(TextDelta(piece))
        elif kind == "thinking_delta":
            piece = str(delta.get("thinking", ""))
            block["thinking"] = block.get("thinking", "") + piece
            out.append(ReasoningDelta(piece))
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
        elif kind == "input_json_delta":
            piece = str(delta.get("partial_json", ""))
            self.json_parts.setdefault(index, []).append(piece)
        self.chars += len(piece)
        if self.chars > self.max_chars:
            raise TooLarge(f"text, reasoning and tool arguments passed {self.max_chars} characters")
        return [e for e in out if getattr(e, "text", "")]

    def result(self) -> ChatResult:
        text, thinking, calls, items = [], [], [], []
        for index, block in sorted(self.blocks.items()):
            kind = block.get("type")
            if kind == "text":
                text.append(block.get("text", ""))
            elif kind == "thinking":
                thinking.append(block.get("thinking", ""))
                if block.get("signature"):  # unsigned (cut) thinking is not accepted back
                    items.append(
                        reasoning_items.tagged(
                            KIND,
                            {
                                "type": "thinking",
                                "thinking": block.get("thinking", ""),
                                "signature": block["signature"],
                            },
                        )
                    )
            elif kind == "redacted_thinking":
                items.append(reasoning_items.tagged(KIND, {"type": "redacted_thinking", "data": block.get("data")}))
            elif kind == "tool_use":
                raw = "".join(self.json_parts.get(index, [])).strip()
                calls.append(
                    ToolCall(
                        id=block.get("id") or f"toolu_{uuid.uuid4().hex[:20]}",
                        name=block.get("name", ""),
                        arguments=raw or json.dumps(block.get("input") or {}),
                    )
                )
        return ChatResult(
            content="".join(text),
            reasoning="".join(thinking),
            tool_calls=calls,
            usage=self._usage(),
            finish_reason=STOP_REASONS.get(self.stop_reason or "", self.stop_reason),
            reasoning_items=items,
        )

    def _usage(self) -> Usage | None:
        if not self.usage_in:
            return None
        read = _int(self.usage_in.get("cache_read_input_tokens"))
        write = _int(self.usage_in.get("cache_creation_input_tokens"))
        # Anthropic's input_tokens leaves out what was read from or written to the cache; the prompt is all three.
        prompt = _int(self.usage_in.get("input_tokens")) + read + write
        reports = "cache_read_input_tokens" in self.usage_in
        return Usage(prompt, self.output_tokens, prompt + self.output_tokens, read, reports, write)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
