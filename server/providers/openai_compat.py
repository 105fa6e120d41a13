"""Chat Completions over HTTP against any OpenAI-compatible server, streamed through a bounded SSE reader."""

from __future__ import annotations

import asyncio
import inspect
import json
import random
from typing import Any
from urllib.parse import urlsplit

import httpx

from server.redaction import display_url, mask

from .assembly import ChatAssembler
from .base import ChatResult, OnEvent, ReasoningDelta, Retrying, StreamEvent, TextDelta
from .errors import ProviderError, error_for_status, error_in_stream, parse_retry_after, redact
from .reasoning_items import without_reasoning_items
from .sse import TooLarge, sse_data

# A Retry-After longer than this is not worth waiting out inside one model call.
RETRY_AFTER_LIMIT = 60.0
# Seconds to keep reading after `data: [DONE]` for the body to end.
DRAIN_AFTER_DONE = 1.0
# An answer's text, reasoning and tool arguments together; a model (or a server) past this is stopped, so a
# 200 MB tool argument is never held whole, let alone stored.
MAX_ANSWER_CHARS = 8 * 1024 * 1024
# Raw bytes: each streamed delta carries ~200 bytes of JSON around a few characters, so this is much larger.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
MAX_SSE_LINE_BYTES = 16 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 1024 * 1024


class _StreamOptionsRejected(Exception):
    """An older server (llama.cpp, Ollama) refused `stream_options`; resend without it."""


class _Emitter:
    def __init__(self, on_event: OnEvent | None) -> None:
        self._on_event = on_event
        self.shown = False  # a delta reached the caller, so a retry would repeat it

    async def emit(self, event: StreamEvent) -> None:
        if isinstance(event, (TextDelta, ReasoningDelta)):
            self.shown = True
        if self._on_event is None:
            return
        outcome = self._on_event(event)
        if inspect.isawaitable(outcome):
            await outcome


class OpenAICompatibleProvider:
    """ChatProvider for `POST {base_url}/chat/completions` with `stream: true`."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        max_retries: int = 3,
        connect_timeout: float = 10,
        read_timeout: float = 120,
        backoff_base: float = 0.5,
        backoff_max: float = 20,
        client: httpx.AsyncClient | None = None,
        extra_headers: dict | None = None,
        max_answer_chars: int = MAX_ANSWER_CHARS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.shown_url = display_url(self.base_url)  # for messages: never the userinfo (a key may sit there)
        self._url_secret = urlsplit(self.base_url).password
        self.max_answer_chars = max_answer_chars
        self.model = model
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._api_key = api_key or None
        self._url = (
            self.base_url if self.base_url.endswith("/chat/completions") else f"{self.base_url}/chat/completions"
        )
        self._timeout = httpx.Timeout(
            connect=connect_timeout, read=read_timeout, write=max(connect_timeout, 60.0), pool=connect_timeout
        )
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(timeout=self._timeout)
        self._extra_headers = dict(extra_headers or {})
        self._send_stream_options = True

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatibleProvider(base_url={self.shown_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def stream_chat(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        on_event: OnEvent | None = None,
        *,
        cache_key: str | None = None,  # Chat Completions servers cache prefixes without being told
    ) -> ChatResult:
        emitter = _Emitter(on_event)
        attempt = 0
        while True:
            try:
                return await self._attempt(messages, tools, emitter)
            except _StreamOptionsRejected:
                self._send_stream_options = False
                continue
            except ProviderError as err:
                if not err.retryable or emitter.shown:
                    raise
                if err.retry_after is not None and err.retry_after > RETRY_AFTER_LIMIT:
                    raise ProviderError(
                        err.kind,
                        f"{err.message} The provider asked to wait {err.retry_after:.0f} s before retrying, "
                        f"longer than the {RETRY_AFTER_LIMIT:.0f} s limit.",
                        status=err.status,
                        partial=err.partial,
                        retry_after=err.retry_after,
                        retryable=False,
                    ) from None
                if attempt >= self.max_retries:
                    if attempt:
                        err.message = f"{err.message} (gave up after {attempt} retries)"
                        err.args = (err.message,)
                    raise
                attempt += 1
                delay = self._retry_delay(attempt, err.retry_after)
                await emitter.emit(Retrying(attempt, delay, _retry_reason(err)))
                await asyncio.sleep(delay)

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        raw = self.backoff_base * 2 ** (attempt - 1)
        return min(self.backoff_max, raw + random.uniform(0, raw / 2))

    def _request_body(self, messages: list[dict], tools: list[dict] | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": without_reasoning_items(messages), "stream": True}
        if self._send_stream_options:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store", **self._extra_headers}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _attempt(self, messages: list[dict], tools: list[dict] | None, emitter: _Emitter) -> ChatResult:
        body = self._request_body(messages, tools)
        assembler = ChatAssembler(max_chars=self.max_answer_chars)
        answered = False  # response headers arrived
        try:
            async with self._client.stream(
                "POST", self._url, json=body, headers=self._headers(), timeout=self._timeout
            ) as response:
                answered = True
                if response.status_code >= 300:  # a moved endpoint belongs in config; redirects are not chased
                    await self._raise_for_status(response, body)
                content_type = response.headers.get("content-type", "")
                if "text/event-stream" not in content_type:
                    await self._take_plain_answer(response, assembler, emitter)
                else:
                    await self._take_stream(response, assembler, emitter)
        except TooLarge as exc:
            raise _too_large(str(exc)) from None
        except httpx.TimeoutException as exc:
            phase = (
                "connecting to"
                if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout))
                else "waiting for an answer from"
            )
            raise ProviderError(
                "timeout", f"Timed out {phase} {self.shown_url}.", partial=_partial(assembler)
            ) from None
        except httpx.TransportError as exc:
            # A connection dropped after finish_reason lost nothing but the [DONE] line.
            if not (answered and assembler.finished):
                detail = redact(str(exc) or type(exc).__name__, self._api_key)
                detail = mask(detail, {self._url_secret}) if self._url_secret else detail
                if answered:
                    raise self._stream_cut(assembler, detail) from None
                raise ProviderError("connection", f"Could not connect to {self.shown_url}: {detail}") from None
        if not assembler.finished:
            raise self._stream_cut(assembler, "no [DONE] or finish_reason")
        if not assembler.produced:
            what = "no choices" if not assembler.saw_choice else "an empty answer"
            raise ProviderError(
                "empty", f"The provider returned {what} for model '{self.model}'.", partial=assembler.result()
            )
        return assembler.result()

    async def _raise_for_status(self, response: httpx.Response, body: dict[str, Any]) -> None:
        text = (await _read_capped(response, MAX_ERROR_BODY_BYTES, cut=True)).decode("utf-8", "replace")
        status = response.status_code
        if status == 400 and "stream_options" in body and "stream_options" in text:
            raise _StreamOptionsRejected()
        raise error_for_status(
            status,
            text,
            model=self.model,
            base_url=self.shown_url,
            api_key=self._api_key,
            retry_after=parse_retry_after(response.headers),
        )

    async def _take_plain_answer(self, response: httpx.Response, assembler: ChatAssembler, emitter: _Emitter) -> None:
        """A server that ignored `stream: true` and sent one JSON completion."""
        text = (await _read_capped(response, self.max_answer_chars)).decode("utf-8", "replace")
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
            raise self._error_in_stream(payload, assembler)
        for event in assembler.add_completion(payload):
            await emitter.emit(event)

    async def _take_stream(self, response: httpx.Response, assembler: ChatAssembler, emitter: _Emitter) -> None:
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

    async def _take_event(self, data: str, assembler: ChatAssembler, emitter: _Emitter) -> None:
        if not data:
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ProviderError(
                "malformed",
                f"The provider sent an unparseable stream chunk: {data[:200]!r}",
                partial=_partial(assembler),
            ) from None
        if not isinstance(chunk, dict):
            raise ProviderError(
                "malformed",
                f"The provider sent a stream chunk that is not an object: {data[:200]!r}",
                partial=_partial(assembler),
            )
        if "error" in chunk:
            raise self._error_in_stream(chunk, assembler)
        for event in assembler.add_chunk(chunk):
            await emitter.emit(event)

    def _error_in_stream(self, payload: dict[str, Any], assembler: ChatAssembler) -> ProviderError:
        return error_in_stream(
            payload, model=self.model, base_url=self.shown_url, api_key=self._api_key, partial=_partial(assembler)
        )

    def _stream_cut(self, assembler: ChatAssembler, detail: str) -> ProviderError:
        partial = assembler.result()
        return ProviderError(
            "stream_cut",
            f"The provider closed the stream before it finished ({detail}); "
            f"{len(partial.content)} characters of text had arrived.",
            partial=partial,
        )


async def _read_capped(response: httpx.Response, cap: int, *, cut: bool = False) -> bytes:
    """The body, never more than ``cap`` bytes of it: past the cap, ``TooLarge`` (or, with ``cut``, the first
    ``cap`` bytes, enough to explain an error)."""
    raw = bytearray()
    async for chunk in response.aiter_bytes():
        raw += chunk
        if len(raw) > cap:
            if cut:
                return bytes(raw[:cap])
            raise TooLarge(f"the answer passed {cap} bytes")
    return bytes(raw)


def _too_large(detail: str) -> ProviderError:
    """Nothing of such an answer is kept (``partial`` stays None): half a tool call is no use to anyone."""
    return ProviderError(
        "too_large",
        f"The model's answer was too large and was stopped: {detail}. Nothing of it "
        "was stored; ask for smaller steps (for example, write a big file in parts).",
    )


def _partial(assembler: ChatAssembler) -> ChatResult | None:
    return assembler.result() if assembler.produced else None


def _retry_reason(err: ProviderError) -> str:
    status = f" (HTTP {err.status})" if err.status else ""
    labels = {
        "rate_limited": "rate limited",
        "server": "server error",
        "timeout": "timed out",
        "connection": "connection failed",
        "stream_cut": "stream cut",
    }
    return f"{labels.get(err.kind, err.kind)}{status}"
