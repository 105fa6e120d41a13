"""Chat Completions over HTTP against any OpenAI-compatible server, streamed through a bounded SSE reader."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import httpx

from .assembly import ChatAssembler
from .base import ChatResult, OnEvent, ServerNotice
from .errors import ProviderError
from .http import (
    MAX_RESPONSE_BYTES,
    MAX_SSE_LINE_BYTES,
    HttpProvider,
    StreamRelay,
    error_text,
    json_object,
    partial_answer,
    read_capped,
    stream_cut,
)
from .llama_props import SHARED_CONTEXT_FULL, TOOLS_DROPPED, ServerProps, read_props
from .reasoning_items import without_reasoning_items
from .sse import sse_data

# Seconds to keep reading after `data: [DONE]` for the body to end.
DRAIN_AFTER_DONE = 1.0


class _StreamOptionsRejected(Exception):
    """An older server (llama.cpp, Ollama) refused `stream_options`; resend without it."""


class OpenAICompatibleProvider(HttpProvider):
    """ChatProvider for `POST {base_url}/chat/completions` with `stream: true`."""

    path = "/chat/completions"

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        extra_headers: dict[str, Any] | None = None,
        max_output_tokens: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(base_url, api_key, model, **options)
        self._extra_headers = dict(extra_headers or {})
        self._send_stream_options = True
        self.max_output_tokens = max_output_tokens
        # OpenAI's own API takes `max_completion_tokens` (its reasoning models refuse `max_tokens`); the servers
        # that copy the API (llama.cpp, vLLM, Ollama, DeepSeek, OpenRouter...) all read `max_tokens`.
        host = urlsplit(self.base_url).hostname or ""
        self._max_tokens_field = "max_completion_tokens" if host == "api.openai.com" else "max_tokens"
        self._template_check: asyncio.Task[ServerProps | None] | None = None  # asked once, beside the first call
        self._told_tools_dropped = False
        self.drops_tools = False  # its /props said the chat template has no tools: they count for nothing

    async def stream_chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_event: OnEvent | None = None,
        *,
        cache_key: str | None = None,  # Chat Completions servers cache prefixes without being told
    ) -> ChatResult:
        emitter = StreamRelay(on_event)
        if tools and self._template_check is None:  # beside the call, so it costs no time to the first token
            self._template_check = asyncio.create_task(read_props(self._client, self.base_url, self.headers()))
        result = await self._retrying(lambda: self._attempt(messages, tools, emitter), emitter)
        if tools and not self._told_tools_dropped:
            await self._tell_if_tools_dropped(emitter)
        return result

    async def _tell_if_tools_dropped(self, emitter: StreamRelay) -> None:
        """Once: a llama.cpp server whose chat template has no tool support drops the tools without a word."""
        assert self._template_check is not None
        try:
            props = await asyncio.wait_for(asyncio.shield(self._template_check), timeout=5)
        except (TimeoutError, asyncio.CancelledError):
            return
        if props is not None and props.supports_tools is False:
            self._told_tools_dropped = self.drops_tools = True
            await emitter.emit(ServerNotice(TOOLS_DROPPED))

    async def aclose(self) -> None:
        if self._template_check is not None and not self._template_check.done():
            self._template_check.cancel()
        await super().aclose()

    def _request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": without_reasoning_items(messages), "stream": True}
        if self._send_stream_options:
            body["stream_options"] = {"include_usage": True}
        if self.max_output_tokens:
            body[self._max_tokens_field] = self.max_output_tokens
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        return body

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store", **self._extra_headers}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _attempt(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, emitter: StreamRelay
    ) -> ChatResult:
        try:
            try:
                return await self._post(messages, tools, emitter)
            except _StreamOptionsRejected:  # at once, and not counted as a retry; never sent again
                self._send_stream_options = False
                return await self._post(messages, tools, emitter)
        except ProviderError as exc:
            if exc.kind == "context_too_long" and exc.context_window is None and SHARED_CONTEXT_FULL in exc.message:
                # llama-server's slots share one KV cache and it is full: its answer states no size, its props
                # state a slot's, which is the most any request can be (R-PTL-1); what fits now is for the turn
                # to find out (server.agent.refused).
                exc.server_full = True
                exc.message = exc.message.replace(
                    "The request is longer than the model's context window",
                    "The model server is full (its slots share one cache, and other requests hold it)",
                )
                props = await read_props(self._client, self.base_url, self.headers())
                if props is not None and props.slot_tokens:
                    exc.context_window, exc.window_from = props.slot_tokens, "props"
            raise

    async def _post(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, emitter: StreamRelay
    ) -> ChatResult:
        body = self._request_body(messages, tools)
        assembler = ChatAssembler(max_chars=self.max_answer_chars)
        async with self._streamed_post(body, assembler) as response:
            if response.status_code >= 300:
                text = await error_text(response)
                if response.status_code == 400 and "stream_options" in body and "stream_options" in text:
                    raise _StreamOptionsRejected()
                raise self._status_error(response, text)
            content_type = response.headers.get("content-type", "")
            if "text/event-stream" not in content_type:
                await self._take_plain_answer(response, assembler, emitter)
            else:
                await self._take_stream(response, assembler, emitter)
        if not assembler.finished:
            raise stream_cut(assembler, "no [DONE] or finish_reason")
        if not assembler.produced:
            what = "no choices" if not assembler.saw_choice else "an empty answer"
            raise ProviderError(
                "empty", f"The provider returned {what} for model '{self.model}'.", partial=assembler.result()
            )
        return assembler.result()

    async def _take_plain_answer(
        self, response: httpx.Response, assembler: ChatAssembler, emitter: StreamRelay
    ) -> None:
        """A server that ignored `stream: true` and sent one JSON completion."""
        text = (await read_capped(response, self.max_answer_chars)).decode("utf-8", "replace")
        try:
            payload = json.loads(text)
        except ValueError:
            content_type = response.headers.get("content-type", "none")
            raise ProviderError(
                "malformed",
                f"Expected an event stream or JSON from {self.shown_url}, got {content_type}: {text[:200]!r}",
            ) from None
        if not isinstance(payload, dict):
            raise ProviderError("malformed", f"Unexpected JSON answer: {text[:200]!r}")
        if "error" in payload:
            raise self.error_from_payload(payload, partial_answer(assembler))
        for event in assembler.add_completion(payload):
            await emitter.emit(event)

    async def _take_stream(self, response: httpx.Response, assembler: ChatAssembler, emitter: StreamRelay) -> None:
        events = sse_data(response.aiter_bytes(), max_line_bytes=MAX_SSE_LINE_BYTES, max_body_bytes=MAX_RESPONSE_BYTES)
        try:
            async with asyncio.timeout(None) as deadline:
                async for event in events:
                    data = event.strip()
                    if assembler.done:
                        continue
                    if data == "[DONE]":
                        # Read on to the end of the body, as the OpenAI SDK does, so the connection can be
                        # reused; but never wait long on a server that keeps it open after [DONE].
                        assembler.done = True
                        deadline.reschedule(asyncio.get_running_loop().time() + DRAIN_AFTER_DONE)
                        continue
                    await self._take_event(data, assembler, emitter)
        except (TimeoutError, httpx.TransportError):
            if not assembler.done:
                raise

    async def _take_event(self, data: str, assembler: ChatAssembler, emitter: StreamRelay) -> None:
        if not data:
            return
        chunk = json_object(data, assembler, "stream chunk")
        if "error" in chunk:
            raise self.error_from_payload(chunk, partial_answer(assembler))
        for event in assembler.add_chunk(chunk):
            await emitter.emit(event)
