"""What the native providers (Anthropic Messages, OpenAI Responses) share: one streamed POST with the same
retry, cancellation, error-kind and partial-answer rules as Chat Completions (openai_compat.py).

A subclass says where to post, with which headers and body, and folds each parsed SSE event into its assembler;
this class owns the HTTP, the bounded SSE reading, the limits and the retries.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from server.redaction import display_url, mask

from .base import ChatResult, OnEvent, Retrying, StreamEvent
from .errors import ProviderError, error_for_status, error_in_stream, parse_retry_after, redact
from .openai_compat import (
    MAX_ANSWER_CHARS,
    MAX_ERROR_BODY_BYTES,
    MAX_RESPONSE_BYTES,
    MAX_SSE_LINE_BYTES,
    RETRY_AFTER_LIMIT,
    _Emitter,
    _read_capped,
    _retry_reason,
    _too_large,
)
from .sse import TooLarge, sse_data


class Assembler(Protocol):
    finished: bool  # the provider said the answer is complete

    @property
    def produced(self) -> bool: ...  # some text, reasoning or tool call arrived

    def add_event(self, event: dict[str, Any]) -> list[StreamEvent]: ...

    def result(self) -> ChatResult: ...


class NativeProvider:
    """Base of a ChatProvider over one streamed ``POST {base_url}/{path}``."""

    path = ""
    kind = ""

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
        max_answer_chars: int = MAX_ANSWER_CHARS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.shown_url = display_url(self.base_url)
        self._url_secret = urlsplit(self.base_url).password
        self.model = model
        self.max_retries, self.backoff_base, self.backoff_max = max_retries, backoff_base, backoff_max
        self.max_answer_chars = max_answer_chars
        self._api_key = api_key or None
        self._url = self.base_url if self.base_url.endswith(self.path) else f"{self.base_url}{self.path}"
        self._timeout = httpx.Timeout(
            connect=connect_timeout, read=read_timeout, write=max(connect_timeout, 60.0), pool=connect_timeout
        )
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(timeout=self._timeout)

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(base_url={self.shown_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    # -- what a kind provides ----------------------------------------------------------------------------
    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def request_body(self, messages: list[dict], tools: list[dict] | None, cache_key: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def new_assembler(self) -> Assembler:
        raise NotImplementedError

    def stream_error(self, event: dict[str, Any], partial: ChatResult | None) -> ProviderError | None:
        """An error carried by a stream event, or None when ``event`` is not one."""
        raise NotImplementedError

    # -- the call -------------------------------------------------------------------------------------------
    async def stream_chat(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        on_event: OnEvent | None = None,
        *,
        cache_key: str | None = None,
    ) -> ChatResult:
        emitter = _Emitter(on_event)
        body = self.request_body(messages, tools, cache_key)
        attempt = 0
        while True:
            try:
                return await self._attempt(body, emitter)
            except ProviderError as err:
                if not err.retryable or emitter.shown:
                    raise
                if err.retry_after is not None and err.retry_after > RETRY_AFTER_LIMIT:
                    err.message = (
                        f"{err.message} The provider asked to wait {err.retry_after:.0f} s before "
                        f"retrying, longer than the {RETRY_AFTER_LIMIT:.0f} s limit."
                    )
                    err.args = (err.message,)
                    raise
                if attempt >= self.max_retries:
                    if attempt:
                        err.message = f"{err.message} (gave up after {attempt} retries)"
                        err.args = (err.message,)
                    raise
                attempt += 1
                delay = _delay(self, attempt, err.retry_after)
                await emitter.emit(Retrying(attempt, delay, _retry_reason(err)))
                await asyncio.sleep(delay)

    async def _attempt(self, body: dict[str, Any], emitter: _Emitter) -> ChatResult:
        assembler = self.new_assembler()
        answered = False
        try:
            async with self._client.stream(
                "POST", self._url, json=body, headers=self.headers(), timeout=self._timeout
            ) as response:
                answered = True
                if response.status_code >= 300:
                    text = (await _read_capped(response, MAX_ERROR_BODY_BYTES, cut=True)).decode("utf-8", "replace")
                    raise error_for_status(
                        response.status_code,
                        text,
                        model=self.model,
                        base_url=self.shown_url,
                        api_key=self._api_key,
                        retry_after=parse_retry_after(response.headers),
                    )
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    raise ProviderError(
                        "malformed",
                        f"Expected an event stream from {self.shown_url}, got "
                        f"{response.headers.get('content-type', 'none')}.",
                    )
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
            if not (answered and assembler.finished):
                detail = redact(str(exc) or type(exc).__name__, self._api_key)
                detail = mask(detail, {self._url_secret}) if self._url_secret else detail
                if answered:
                    raise _stream_cut(assembler, detail) from None
                raise ProviderError("connection", f"Could not connect to {self.shown_url}: {detail}") from None
        if not assembler.finished:
            raise _stream_cut(assembler, "no end-of-message event")
        if not assembler.produced:
            raise ProviderError(
                "empty", f"The provider returned an empty answer for model '{self.model}'.", partial=assembler.result()
            )
        return assembler.result()

    async def _take_stream(self, response: httpx.Response, assembler: Assembler, emitter: _Emitter) -> None:
        events = sse_data(response.aiter_bytes(), max_line_bytes=MAX_SSE_LINE_BYTES, max_body_bytes=MAX_RESPONSE_BYTES)
        async for data in events:
            if assembler.finished or not data.strip():
                continue  # read on to the end of the body, so the connection can be reused
            try:
                event = json.loads(data)
            except ValueError:
                raise ProviderError(
                    "malformed",
                    f"The provider sent an unparseable stream event: {data[:200]!r}",
                    partial=_partial(assembler),
                ) from None
            if not isinstance(event, dict):
                raise ProviderError(
                    "malformed",
                    f"The provider sent a stream event that is not an object: {data[:200]!r}",
                    partial=_partial(assembler),
                )
            failure = self.stream_error(event, _partial(assembler))
            if failure is not None:
                raise failure
            for out in assembler.add_event(event):
                await emitter.emit(out)

    def error_from_payload(self, payload: dict[str, Any], partial: ChatResult | None) -> ProviderError:
        """An in-stream ``{"error": {...}}`` mapped as the same answer over HTTP would be."""
        return error_in_stream(
            payload, model=self.model, base_url=self.shown_url, api_key=self._api_key, partial=partial
        )


def _delay(provider: NativeProvider, attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(retry_after, provider.backoff_max)
    raw = provider.backoff_base * 2 ** (attempt - 1)
    return min(provider.backoff_max, raw + random.uniform(0, raw / 2))


def _partial(assembler: Assembler) -> ChatResult | None:
    return assembler.result() if assembler.produced else None


def _stream_cut(assembler: Assembler, detail: str) -> ProviderError:
    partial = assembler.result()
    return ProviderError(
        "stream_cut",
        f"The provider closed the stream before it finished ({detail}); "
        f"{len(partial.content)} characters of text had arrived.",
        partial=partial,
    )
