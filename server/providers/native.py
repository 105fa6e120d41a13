"""What the native providers (Anthropic Messages, OpenAI Responses) share: one streamed POST with the same
retry, cancellation, error-kind and partial-answer rules as Chat Completions (openai_compat.py, both over http.py).

A subclass says where to post, with which headers and body, and folds each parsed SSE event into its assembler;
this class reads the bounded SSE stream; ``HttpProvider`` owns the HTTP, the limits and the retries.
"""

from __future__ import annotations

from typing import Any, Protocol

import httpx

from .base import ChatResult, OnEvent, StreamEvent
from .errors import ProviderError
from .http import (
    MAX_RESPONSE_BYTES,
    MAX_SSE_LINE_BYTES,
    HttpProvider,
    StreamedAnswer,
    StreamRelay,
    error_text,
    json_object,
    partial_answer,
    stream_cut,
)
from .sse import sse_data


class Assembler(StreamedAnswer, Protocol):
    def add_event(self, event: dict[str, Any]) -> list[StreamEvent]: ...


class NativeProvider(HttpProvider):
    """Base of a ChatProvider over one streamed ``POST {base_url}/{path}`` of server-sent JSON events."""

    kind = ""

    # -- what a kind provides ----------------------------------------------------------------------------
    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, cache_key: str | None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def new_assembler(self) -> Assembler:
        raise NotImplementedError

    def stream_error(self, event: dict[str, Any], partial: ChatResult | None) -> ProviderError | None:
        """An error carried by a stream event, or None when ``event`` is not one."""
        raise NotImplementedError

    # -- the call -------------------------------------------------------------------------------------------
    async def stream_chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_event: OnEvent | None = None,
        *,
        cache_key: str | None = None,
    ) -> ChatResult:
        emitter = StreamRelay(on_event)
        body = self.request_body(messages, tools, cache_key)
        return await self._retrying(lambda: self._attempt(body, emitter), emitter)

    async def _attempt(self, body: dict[str, Any], emitter: StreamRelay) -> ChatResult:
        assembler = self.new_assembler()
        async with self._streamed_post(body, assembler) as response:
            if response.status_code >= 300:
                raise self._status_error(response, await error_text(response))
            if "text/event-stream" not in response.headers.get("content-type", ""):
                raise ProviderError(
                    "malformed",
                    f"Expected an event stream from {self.shown_url}, got "
                    f"{response.headers.get('content-type', 'none')}.",
                )
            await self._take_stream(response, assembler, emitter)
        if not assembler.finished:
            raise stream_cut(assembler, "no end-of-message event")
        if not assembler.produced:
            raise ProviderError(
                "empty", f"The provider returned an empty answer for model '{self.model}'.", partial=assembler.result()
            )
        return assembler.result()

    async def _take_stream(self, response: httpx.Response, assembler: Assembler, emitter: StreamRelay) -> None:
        events = sse_data(response.aiter_bytes(), max_line_bytes=MAX_SSE_LINE_BYTES, max_body_bytes=MAX_RESPONSE_BYTES)
        async for data in events:
            if assembler.finished or not data.strip():
                continue  # read on to the end of the body, so the connection can be reused
            event = json_object(data, assembler, "stream event")
            failure = self.stream_error(event, partial_answer(assembler))
            if failure is not None:
                raise failure
            for out in assembler.add_event(event):
                await emitter.emit(out)


def content_text(content: Any) -> str:
    """An OpenAI-shaped message content as the plain text a native API's text field takes (parts joined by
    newlines; images are sent as blocks of their own, not here)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
