"""What a chat provider returns and streams, and the interface the agent loop codes against."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the raw JSON string as the model streamed it


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    # B-CACHE-5: the part of prompt_tokens the provider served from its prompt cache (0 when it says nothing);
    # `reports_cache` tells a provider that said 0 from one that has no such figure.
    cached_tokens: int = 0
    reports_cache: bool = False
    # Anthropic bills writing its prompt cache apart (``cache_creation_input_tokens``); part of prompt_tokens.
    cache_write_tokens: int = 0


@dataclass
class ChatResult:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    # What the provider needs sent back unchanged with this answer and that is neither text nor counted: Anthropic
    # thinking blocks with their signatures, Responses reasoning items with their encrypted content. Each is the
    # provider's own dict plus ``"provider": <kind>``, so a provider sends back only its own (see reasoning_items.py).
    reasoning_items: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class Retrying:
    """Sent before sleeping `delay` seconds ahead of retry number `attempt` (1-based)."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True)
class ServerNotice:
    """Something the user should know about the model server that no answer says (shown once, as a notice)."""

    message: str


StreamEvent = TextDelta | ReasoningDelta | Retrying | ServerNotice
# Sync or async; an awaitable return value is awaited before streaming continues.
OnEvent = Callable[[StreamEvent], Awaitable[Any] | Any]


@runtime_checkable
class ChatProvider(Protocol):
    model: str

    async def stream_chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_event: OnEvent | None,
        *,
        cache_key: str | None = None,
    ) -> ChatResult:
        """``cache_key`` names the conversation (the session) for providers that route prompt caches by it."""
        ...
