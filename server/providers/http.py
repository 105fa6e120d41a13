"""What every HTTP provider kind shares: the client and its limits, the retries, and the one streamed POST whose
failures (timeouts, dropped connections, answers too large) become ``ProviderError``s the same way for all.

A kind (openai_compat.py, and native.py's Anthropic and Responses) says where to post (``path``), with which
``headers()``, and reads the answer; this class owns the connection and when to try again.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import random
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import msgspec

from server.security.redaction import display_url, mask

from .base import ChatResult, OnEvent, ReasoningDelta, Retrying, StreamEvent, TextDelta
from .errors import ProviderError, error_for_status, error_in_stream, parse_retry_after, redact
from .sse import TooLarge

# A Retry-After longer than this is not worth waiting out inside one model call.
RETRY_AFTER_LIMIT = 60.0
# An answer's text, reasoning and tool arguments together; a model (or a server) past this is stopped, so a
# 200 MB tool argument is never held whole, let alone stored.
MAX_ANSWER_CHARS = 8 * 1024 * 1024
# Raw bytes: each streamed delta carries ~200 bytes of JSON around a few characters, so this is much larger.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
MAX_SSE_LINE_BYTES = 16 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 1024 * 1024


class StreamedAnswer(Protocol):
    """What the POST needs of a kind's assembler to tell a finished answer from a cut one."""

    @property
    def finished(self) -> bool: ...  # the provider said the answer is complete

    @property
    def produced(self) -> bool: ...  # some text, reasoning or tool call arrived

    def result(self) -> ChatResult: ...


class StreamRelay:
    """Hands a call's stream events to the caller, and remembers whether any text reached it."""

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


_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def tls_for(base_url: str) -> ssl.SSLContext | bool:
    """httpx's ``verify`` for a provider's client, which only ever requests ``base_url`` (no redirects followed).
    A plain-http one (a local model server) never speaks TLS: a context that trusts no certificate, so any TLS
    there would fail closed, instead of loading the CA bundle (some 20 ms at every start). Behind a proxy from the
    environment (which may itself speak TLS), and for https, httpx's default verification."""
    if urlsplit(base_url).scheme != "http" or any(os.environ.get(v) or os.environ.get(v.lower()) for v in _PROXY_VARS):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies hostnames and certificates, and trusts none


class HttpProvider:
    """Base of a ChatProvider over one streamed ``POST {base_url}{path}`` (``path`` is not added twice)."""

    path = ""

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
        self.shown_url = display_url(self.base_url)  # for messages: never the userinfo (a key may sit there)
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
        self._client = client or httpx.AsyncClient(timeout=self._timeout, verify=tls_for(self.base_url))

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(base_url={self.shown_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _json_headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", **self.headers()}

    async def _retrying(self, attempt: Callable[[], Awaitable[ChatResult]], emitter: StreamRelay) -> ChatResult:
        """``attempt()`` again after a retryable failure, up to ``max_retries`` times with backoff (or the
        provider's Retry-After), never once a delta has reached the caller."""
        retries = 0
        while True:
            try:
                return await attempt()
            except ProviderError as err:
                if not err.retryable or emitter.shown:
                    raise
                if err.retry_after is not None and err.retry_after > RETRY_AFTER_LIMIT:
                    err.message = (
                        f"{err.message} The provider asked to wait {err.retry_after:.0f} s before "
                        f"retrying, longer than the {RETRY_AFTER_LIMIT:.0f} s limit."
                    )
                    err.args, err.retryable = (err.message,), False
                    raise
                if retries >= self.max_retries:
                    if retries:
                        err.message = f"{err.message} (gave up after {retries} retries)"
                        err.args = (err.message,)
                    raise
                retries += 1
                delay = self._retry_delay(retries, err.retry_after)
                await emitter.emit(Retrying(retries, delay, _retry_reason(err)))
                await asyncio.sleep(delay)

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        raw = self.backoff_base * 2 ** (attempt - 1)
        return float(min(self.backoff_max, raw + random.uniform(0, raw / 2)))

    @asynccontextmanager
    async def _streamed_post(self, body: dict[str, Any], answer: StreamedAnswer) -> AsyncIterator[httpx.Response]:
        """The POST's response, read inside the block into ``answer``; a timeout, a failed connection or an answer
        past a cap, there or inside the block, is raised as a ``ProviderError``. A connection dropped after the
        answer finished lost nothing but its closing line, so it is not an error."""
        answered = False  # response headers arrived
        try:
            # msgspec, not httpx's json.dumps: a long conversation's body is encoded at every call, on the loop
            async with self._client.stream(
                "POST",
                self._url,
                content=msgspec.json.encode(body),
                headers=self._json_headers(),
                timeout=self._timeout,
            ) as response:
                answered = True
                yield response
        except TooLarge as exc:
            raise _too_large(str(exc)) from None
        except httpx.TimeoutException as exc:
            phase = (
                "connecting to"
                if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout))
                else "waiting for an answer from"
            )
            raise ProviderError(
                "timeout", f"Timed out {phase} {self.shown_url}.", partial=partial_answer(answer)
            ) from None
        except httpx.TransportError as exc:
            if not (answered and answer.finished):
                detail = redact(str(exc) or type(exc).__name__, self._api_key)
                detail = mask(detail, {self._url_secret}) if self._url_secret else detail
                if answered:
                    raise stream_cut(answer, detail) from None
                raise ProviderError("connection", f"Could not connect to {self.shown_url}: {detail}") from None

    def _status_error(self, response: httpx.Response, text: str) -> ProviderError:
        """An HTTP error answer (``text`` from ``error_text``); a moved endpoint belongs in config, so redirects
        are not chased either."""
        return error_for_status(
            response.status_code,
            text,
            model=self.model,
            base_url=self.shown_url,
            api_key=self._api_key,
            retry_after=parse_retry_after(response.headers),
            url=display_url(self._url),
            path=self.path,
        )

    def error_from_payload(self, payload: dict[str, Any], partial: ChatResult | None) -> ProviderError:
        """An in-stream ``{"error": {...}}`` mapped as the same answer over HTTP would be."""
        return error_in_stream(
            payload, model=self.model, base_url=self.shown_url, api_key=self._api_key, partial=partial
        )


async def error_text(response: httpx.Response) -> str:
    """Enough of an error answer's body to explain it."""
    return (await read_capped(response, MAX_ERROR_BODY_BYTES, cut=True)).decode("utf-8", "replace")


async def read_capped(response: httpx.Response, cap: int, *, cut: bool = False) -> bytes:
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


def json_object(data: str, answer: StreamedAnswer, what: str) -> dict[str, Any]:
    """One streamed ``data`` line as the JSON object it must be (``what`` names it in the error)."""
    try:
        parsed = json.loads(data)
    except ValueError:
        raise ProviderError(
            "malformed", f"The provider sent an unparseable {what}: {data[:200]!r}", partial=partial_answer(answer)
        ) from None
    if not isinstance(parsed, dict):
        raise ProviderError(
            "malformed",
            f"The provider sent a {what} that is not an object: {data[:200]!r}",
            partial=partial_answer(answer),
        )
    return parsed


def partial_answer(answer: StreamedAnswer) -> ChatResult | None:
    return answer.result() if answer.produced else None


def stream_cut(answer: StreamedAnswer, detail: str) -> ProviderError:
    partial = answer.result()
    return ProviderError(
        "stream_cut",
        f"The provider closed the stream before it finished ({detail}); "
        f"{len(partial.content)} characters of text had arrived.",
        partial=partial,
    )


def _too_large(detail: str) -> ProviderError:
    """Nothing of such an answer is kept (``partial`` stays None): half a tool call is no use to anyone."""
    return ProviderError(
        "too_large",
        f"The model's answer was too large and was stopped: {detail}. Nothing of it "
        "was stored; ask for smaller steps (for example, write a big file in parts).",
    )


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
