"""OpenAI Responses (``POST /v1/responses``, streamed) behind the ChatProvider interface.

Threadline owns the transcript, so nothing is kept server-side (``store: false``) and every request sends the whole
view as input items: messages, ``function_call`` and ``function_call_output`` items, and the reasoning items of
earlier answers with their ``encrypted_content`` (asked for with ``include``), which a stateless reasoning model
needs back. ``prompt_cache_key`` is the session, so one session's requests meet the same prompt cache.
"""

from __future__ import annotations

import uuid
from typing import Any

from . import reasoning_items
from .base import ChatResult, ReasoningDelta, StreamEvent, TextDelta, ToolCall, Usage
from .errors import ProviderError
from .native import NativeProvider, content_text
from .sse import TooLarge

KIND = "openai-responses"


class ResponsesProvider(NativeProvider):
    path = "/responses"
    kind = KIND

    def __init__(
        self, base_url: str, api_key: str | None, model: str, *, max_output_tokens: int | None = None, **options: Any
    ) -> None:
        super().__init__(base_url, api_key, model, **options)
        self.max_output_tokens = max_output_tokens

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, cache_key: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": input_items(messages),
            "stream": True,
            "store": False,
            "include": ["reasoning.encrypted_content"],
        }
        if tools:
            body["tools"] = [_tool(spec) for spec in tools]
            body["tool_choice"] = "auto"
            body["parallel_tool_calls"] = True
        if cache_key:
            body["prompt_cache_key"] = cache_key
        if self.max_output_tokens:
            body["max_output_tokens"] = self.max_output_tokens
        return body

    def new_assembler(self) -> ResponseAssembler:
        return ResponseAssembler(self.max_answer_chars)

    def stream_error(self, event: dict[str, Any], partial: ChatResult | None) -> ProviderError | None:
        kind = event.get("type")
        if kind == "error":
            fields = {k: event.get(k) for k in ("code", "message", "param", "type") if event.get(k) is not None}
            return self.error_from_payload({"error": fields or event}, partial)
        if kind == "response.failed":
            error = ((event.get("response") or {}).get("error")) or {"message": "the response failed"}
            return self.error_from_payload({"error": error}, partial)
        return None


def input_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The OpenAI-shaped view as Responses input items, in order."""
    items: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": str(msg.get("tool_call_id")),
                    "output": content_text(msg.get("content")),
                }
            )
        elif role == "assistant":
            items.extend(reasoning_items.items_for(msg, KIND))
            text = content_text(msg.get("content"))
            if text:
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
                )
            for call in msg.get("tool_calls") or ():
                fn = call.get("function") or {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": str(call.get("id")),
                        "name": fn.get("name", ""),
                        "arguments": fn.get("arguments") or "{}",
                    }
                )
        else:
            items.append(
                {
                    "type": "message",
                    "role": "developer" if role == "developer" else role,
                    "content": _input_parts(msg.get("content")),
                }
            )
    return items


def _tool(spec: dict[str, Any]) -> dict[str, Any]:
    fn = spec.get("function", spec)
    return {
        "type": "function",
        "name": fn["name"],
        "description": fn.get("description", ""),
        "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
        "strict": False,
    }


def _input_parts(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return [{"type": "input_text", "text": content or ""}]
    parts: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "image_url":
            parts.append({"type": "input_image", "image_url": str((part.get("image_url") or {}).get("url", ""))})
        elif isinstance(part.get("text"), str):
            parts.append({"type": "input_text", "text": part["text"]})
    return parts or [{"type": "input_text", "text": ""}]


class ResponseAssembler:
    """Folds Responses stream events into a result; ``response.completed``/``response.incomplete`` end it."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.items: dict[int, dict[str, Any]] = {}  # output_index -> the item as last seen
        self.arguments: dict[int, list[str]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.finished = False

    @property
    def produced(self) -> bool:
        return bool(self.text or self.reasoning or self._calls())

    def add_event(self, event: dict[str, Any]) -> list[StreamEvent]:
        kind = str(event.get("type", ""))
        raw_index = event.get("output_index")
        index = raw_index if isinstance(raw_index, int) else -1
        out: list[StreamEvent] = []
        piece = ""
        if kind == "response.output_text.delta":
            piece = str(event.get("delta", ""))
            self.text.append(piece)
            out.append(TextDelta(piece))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            piece = str(event.get("delta", ""))
            self.reasoning.append(piece)
            out.append(ReasoningDelta(piece))
        elif kind == "response.function_call_arguments.delta":
            piece = str(event.get("delta", ""))
            self.arguments.setdefault(index, []).append(piece)
        elif kind == "response.function_call_arguments.done":
            self.arguments[index] = [str(event.get("arguments", ""))]
        elif kind in ("response.output_item.added", "response.output_item.done"):
            if isinstance(event.get("item"), dict):
                self.items[index] = event["item"]
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(event.get("response") or {}, kind)
        self.chars += len(piece)
        if self.chars > self.max_chars:
            raise TooLarge(f"text, reasoning and tool arguments passed {self.max_chars} characters")
        return [e for e in out if getattr(e, "text", "")]

    def _finish(self, response: dict[str, Any], kind: str) -> None:
        self.finished = True
        usage = response.get("usage")
        if isinstance(usage, dict):
            prompt, completion = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
            details = usage.get("input_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            self.usage = Usage(
                prompt,
                completion,
                _int(usage.get("total_tokens")) or prompt + completion,
                min(_int(cached), prompt),
                isinstance(cached, int),
            )
        if kind == "response.incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            self.finish_reason = "length" if reason == "max_output_tokens" else str(reason or "incomplete")
        else:
            self.finish_reason = "tool_calls" if self._calls() else "stop"

    def _calls(self) -> list[ToolCall]:
        calls = []
        for index, item in sorted(self.items.items()):
            if item.get("type") != "function_call":
                continue
            arguments = "".join(self.arguments.get(index, [])) or str(item.get("arguments") or "")
            calls.append(
                ToolCall(
                    id=str(item.get("call_id") or f"call_{uuid.uuid4().hex[:20]}"),
                    name=str(item.get("name", "")),
                    arguments=arguments.strip() or "{}",
                )
            )
        return calls

    def result(self) -> ChatResult:
        kept = []
        for _, item in sorted(self.items.items()):
            if item.get("type") == "reasoning" and item.get("encrypted_content"):
                kept.append(
                    reasoning_items.tagged(
                        KIND, {key: item[key] for key in ("type", "id", "summary", "encrypted_content") if key in item}
                    )
                )
        return ChatResult(
            content="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=self._calls(),
            usage=self.usage,
            finish_reason=self.finish_reason,
            reasoning_items=kept,
        )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
