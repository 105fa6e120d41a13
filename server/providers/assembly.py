"""Assemble Chat Completions chunks (or one plain completion) into a ChatResult. Pure: no I/O."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from .base import ChatResult, ReasoningDelta, StreamEvent, TextDelta, ToolCall, Usage
from .sse import TooLarge


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatAssembler:
    """Feed it parsed chunks; it returns the events to emit and keeps the result so far."""

    def __init__(self, max_chars: int | None = None) -> None:
        self.max_chars = max_chars  # text, reasoning and tool arguments together; past it, ``TooLarge``
        self.chars = 0
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, _PendingCall] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.saw_choice = False
        self.done = False  # `data: [DONE]` arrived

    @property
    def finished(self) -> bool:
        return self.done or self.finish_reason is not None

    @property
    def produced(self) -> bool:
        return bool(self.content or self.reasoning or self.calls)

    def add_chunk(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        self._take_usage(chunk.get("usage"))
        events: list[StreamEvent] = []
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return events
        self.saw_choice = True
        choice = choices[0]
        delta = choice.get("delta") or choice.get("message") or {}
        if isinstance(delta, dict):
            events.extend(self._take_delta(delta))
        if self.max_chars is not None and self.chars > self.max_chars:
            raise TooLarge(f"text, reasoning and tool arguments passed {self.max_chars} characters")
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        return events

    def add_completion(self, completion: dict[str, Any]) -> list[StreamEvent]:
        """A provider that ignored `stream` answered with one `chat.completion` object."""
        events = self.add_chunk(completion)
        self.done = True
        # Reasoning first: that is the order a stream would have shown them in.
        return sorted(events, key=lambda event: not isinstance(event, ReasoningDelta))

    def result(self) -> ChatResult:
        return ChatResult(
            content="".join(self.content),
            reasoning="".join(self.reasoning),
            tool_calls=[self._finish_call(index, call) for index, call in sorted(self.calls.items())],
            usage=self.usage,
            finish_reason=self.finish_reason,
        )

    def _take_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        # Some servers send both fields with the same text; take one, never both.
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self.reasoning.append(reasoning)
            self.chars += len(reasoning)
            events.append(ReasoningDelta(reasoning))
        text = _text_of(delta.get("content"))
        if text:
            self.content.append(text)
            self.chars += len(text)
            events.append(TextDelta(text))
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            for position, fragment in enumerate(tool_calls):
                if isinstance(fragment, dict):
                    self._take_call_fragment(position, fragment)
        return events

    def _take_call_fragment(self, position: int, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        frag_id = fragment.get("id") or ""
        if not isinstance(index, int):
            # No index: use the position, unless that slot already holds a different call.
            index = position
            held = self.calls.get(index)
            if held and frag_id and held.id and held.id != frag_id:
                index = max(self.calls) + 1
        call = self.calls.setdefault(index, _PendingCall())
        if frag_id and not call.id:
            call.id = str(frag_id)
        function = fragment.get("function") or {}
        name = function.get("name")
        if isinstance(name, str) and name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)  # some servers send them already parsed
        if isinstance(arguments, str):
            call.arguments.append(arguments)
            self.chars += len(arguments)

    def _take_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        prompt = _int(usage.get("prompt_tokens"))
        completion = _int(usage.get("completion_tokens"))
        total = _int(usage.get("total_tokens")) or prompt + completion
        cached = _cached_tokens(usage)
        if cached is not None and prompt:
            cached = min(cached, prompt)
        self.usage = Usage(prompt, completion, total, cached or 0, cached is not None)

    @staticmethod
    def _finish_call(index: int, call: _PendingCall) -> ToolCall:
        arguments = "".join(call.arguments)
        # Ids pair results with calls; a server that omits them gets one made up.
        return ToolCall(
            id=call.id or f"call_{index}_{uuid.uuid4().hex[:12]}",
            name=call.name,
            arguments=arguments if arguments.strip() else "{}",
        )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _cached_tokens(usage: dict[str, Any]) -> int | None:
    """B-CACHE-5: the cached-prefix figure under whichever name the provider uses; None when it gives none.

    OpenAI (and most compatible servers): ``prompt_tokens_details.cached_tokens``; DeepSeek:
    ``prompt_cache_hit_tokens``; Anthropic-shaped gateways: ``cache_read_input_tokens``. Any of them may be null.
    """
    details = usage.get("prompt_tokens_details")
    candidates = [
        details.get("cached_tokens") if isinstance(details, dict) else None,
        usage.get("prompt_cache_hit_tokens"),
        usage.get("cache_read_input_tokens"),
    ]
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool):
            return max(0, value)
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
