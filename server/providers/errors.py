"""Provider failures: one exception with a `kind`, and the mapping from HTTP answers to it."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from .base import ChatResult

KINDS = frozenset(
    {
        "auth",
        "model_not_found",
        "rate_limited",
        "server",
        "timeout",
        "connection",
        "stream_cut",
        "malformed",
        "empty",
        "context_too_long",
        "bad_request",
        "too_large",
        "not_found",
    }
)
# Kinds worth another attempt, provided nothing has been shown to the caller yet.
RETRYABLE_KINDS = frozenset({"rate_limited", "server", "timeout", "connection", "stream_cut"})


class ProviderError(Exception):
    """A model call that failed. `partial` holds whatever streamed before the failure."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status: int | None = None,
        partial: ChatResult | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        prompt_tokens: int | None = None,
        context_window: int | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown ProviderError kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.partial = partial
        self.retry_after = retry_after
        self.retryable = kind in RETRYABLE_KINDS if retryable is None else retryable
        self.prompt_tokens = prompt_tokens  # context_too_long: the provider's count of the refused prompt, if said
        self.context_window = context_window  # context_too_long: the window the server says it has, if said
        self.window_from = "answer" if context_window else None  # where context_window was read: "answer", "props"
        # context_too_long: the server was full (llama-server's slots sharing one KV cache), which says nothing
        # of this request's own size: what other requests hold decides
        self.server_full = False

    def __repr__(self) -> str:
        return f"ProviderError(kind={self.kind!r}, status={self.status!r}, message={self.message!r})"


# R-PTL-1: the generic rule plus each provider's own wording, as they really answer.
_CONTEXT_TOO_LONG = re.compile(
    "|".join(
        [
            r"prompt (is )?too long",  # generic, Anthropic-style, Ollama
            r"context length",  # generic, OpenAI, DeepSeek, OpenRouter, vLLM
            r"too many tokens",  # generic
            r"context_length_exceeded",  # OpenAI / Azure / Groq error code
            r"range of input length should be",  # Qwen / DashScope compatible mode
            r"invalidparameter.{0,80}input length",  # DashScope
            r"input length exceeds",  # Ollama
            r"exceeded model token limit",  # Moonshot / Kimi
            r"longer than the maximum model length",  # vLLM
            r"prompt \(.{0,60}\) is too long",  # vLLM "Input prompt (N tokens) is too long"
            r"exceeds? the available context size",  # llama.cpp server
            r"exceed_context_size",  # llama.cpp error type
            r"context size has been exceeded",  # llama.cpp server (HTTP 500): its slots' shared KV cache is full
            r"maximum prompt length",  # xAI
            r"input token count.{0,40}exceeds",  # Gemini compatible mode
            r"exceed(s|ed)? (the )?(model'?s? )?context (window|limit)",
        ]
    ),
    re.IGNORECASE | re.DOTALL,
)
# What a context-too-long answer says the refused prompt counted, in the wordings that give it (B-TOK-3: the
# provider's own count teaches the calibration as a reported usage does). Linear patterns, on a bounded prefix.
_REFUSED_PROMPT_TOKENS = (
    re.compile(r"prompt is too long: (\d{1,9}) tokens >"),  # Anthropic
    re.compile(r"your messages resulted in (\d{1,9}) tokens"),  # OpenAI
    re.compile(r"requested (?:about )?\d{1,9} tokens \((\d{1,9}) (?:in the messages|of text input)"),  # DeepSeek, vLLM
    re.compile(r"prompt \((\d{1,9}) tokens\) is too long"),  # vLLM
    re.compile(r'"n_prompt_tokens": ?(\d{1,9})'),  # llama.cpp server
    re.compile(r"request \((\d{1,9}) tokens\) exceeds the available context size"),  # llama.cpp's message
    re.compile(r"your request has (\d{1,9}) input tokens"),  # vLLM (since 0.10)
)


# What a context-too-long answer says the server's real window is (a window configured larger than the
# server's could not recover). Linear patterns, on a bounded prefix.
_STATED_WINDOW = (
    re.compile(r'"n_ctx": ?(\d{1,9})'),  # llama.cpp server's exceed_context_size_error
    re.compile(r"available context size \((\d{1,9}) tokens\)"),  # llama.cpp server's message
    re.compile(r"maximum context length is (\d{1,9}) tokens"),  # OpenAI, DeepSeek, vLLM, OpenRouter
    re.compile(r"prompt is too long: \d{1,9} tokens > (\d{1,9}) maximum"),  # Anthropic
    re.compile(r"exceeded model token limit: (\d{1,9})"),  # Moonshot / Kimi
    re.compile(r"range of input length should be \[1, ?(\d{1,9})\]", re.IGNORECASE),  # Qwen / DashScope
)


def stated_context_window(body: str) -> int | None:
    """The context window a provider's context-too-long answer says it has, when it says; else None."""
    head = body[:20_000]
    for pattern in _STATED_WINDOW:
        match = pattern.search(head)
        if match:
            return int(match.group(1)) or None
    return None


def refused_prompt_tokens(body: str) -> int | None:
    """The provider's count of a prompt it refused as too long, when its answer says it; else None."""
    head = body[:20_000]
    for pattern in _REFUSED_PROMPT_TOKENS:
        match = pattern.search(head)
        if match:
            return int(match.group(1)) or None
    return None


def names_model(body: str, model: str) -> bool:
    """Whether a 404's body is about a model (OpenAI, vLLM: "The model `x` does not exist"; Ollama: "model \"x\"
    not found"), rather than a path nothing answers at (llama.cpp: "File Not Found"; OpenAI: "Invalid URL")."""
    head = body[:20_000]
    return (bool(model) and model in head) or re.search(r"\bmodel", head, re.IGNORECASE) is not None


# Statuses whose bodies are about something else even when they mention tokens.
_NOT_CONTEXT_STATUSES = frozenset({401, 403, 404, 429})


def is_context_too_long(status: int | None, body: str) -> bool:
    """R-PTL-1: does this error answer say the request exceeded the model's context window?"""
    if status is not None and (status < 400 or status in _NOT_CONTEXT_STATUSES):
        return False
    return bool(body) and _CONTEXT_TOO_LONG.search(body) is not None


def redact(text: str, api_key: str | None) -> str:
    """Remove the API key, and the masked echoes of it some providers send back, from `text`."""
    if api_key and len(api_key) >= 4:
        text = text.replace(api_key, "***")
    text = re.sub(r"(?i)(api key provided:?\s*)\S+", r"\1***", text)
    return re.sub(r"\bsk-[A-Za-z0-9_*\-]{4,}", "sk-***", text)


def provider_message(body: str, limit: int = 500) -> str:
    """The human-readable message out of an error body, whatever shape the provider uses."""
    try:
        payload: Any = json.loads(body)
    except ValueError:
        return _clip(body.strip(), limit)
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        for key in ("message", "detail", "msg"):
            if isinstance(error.get(key), str) and error[key]:
                return _clip(error[key], limit)
    if isinstance(error, str):
        return _clip(error, limit)
    return _clip(body.strip(), limit)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def error_for_status(
    status: int,
    body: str,
    *,
    model: str,
    base_url: str,
    api_key: str | None,
    retry_after: float | None = None,
    partial: ChatResult | None = None,
    url: str | None = None,
    path: str = "",
) -> ProviderError:
    """Map an HTTP error answer (or an in-stream error carrying a status) to a ProviderError; ``url`` is where the
    request went (shown for a 404), ``path`` what the kind adds to the base URL."""
    said = redact(provider_message(body), api_key)
    suffix = f" Provider said: {said}" if said else ""

    def err(kind: str, message: str, **extra: Any) -> ProviderError:
        return ProviderError(kind, message, status=status, partial=partial, retry_after=retry_after, **extra)

    if status < 400:
        return err(
            "bad_request",
            f"The provider at {base_url} redirected the request (HTTP {status}); "
            f"set the base URL to where it points.{suffix}",
        )
    if status == 401:
        if not api_key:
            return err(
                "auth", f"The provider at {base_url} requires an API key, but none is configured (HTTP 401).{suffix}"
            )
        return err(
            "auth",
            f"The API key was rejected by the provider at {base_url} (HTTP 401). Check the configured API key.{suffix}",
        )
    if status == 403:
        return err("auth", f"The API key lacks access to model '{model}' at {base_url} (HTTP 403).{suffix}")
    if status == 404:
        if not names_model(body, model):  # nothing answers at this path: the URL is wrong, not the model
            return err(
                "not_found",
                f"Nothing answers at {url or base_url} (HTTP 404): the path is wrong. The base URL must be the "
                f"server's API root (usually ending in /v1); Threadline adds {path or 'the endpoint'} to it.{suffix}",
            )
        return err(
            "model_not_found",
            f"Model '{model}' was not found at {base_url} (HTTP 404). Check the model name.{suffix}",
        )
    if status == 429:
        # A spent quota is not a rate: waiting a few seconds will not help.
        quota = "insufficient_quota" in body or "exceeded your current quota" in body
        return err(
            "rate_limited", f"Rate limited by the provider (HTTP 429).{suffix}", retryable=False if quota else None
        )
    if is_context_too_long(status, body):
        return err(
            "context_too_long",
            f"The request is longer than the model's context window (HTTP {status}).{suffix}",
            prompt_tokens=refused_prompt_tokens(body),
            context_window=stated_context_window(body),
        )
    if status >= 500:
        return err("server", f"The provider had a server error (HTTP {status}).{suffix}")
    return err("bad_request", f"The provider rejected the request (HTTP {status}).{suffix}")


def error_in_stream(
    payload: Mapping[str, Any],
    *,
    model: str,
    base_url: str,
    api_key: str | None,
    partial: ChatResult | None,
) -> ProviderError:
    """Map `data: {"error": {...}}` sent inside a 200 stream as the equivalent HTTP error would be."""
    body = json.dumps(payload)
    error = payload.get("error")
    fields = error if isinstance(error, dict) else {}
    status = next(
        (v for v in (fields.get("code"), fields.get("status")) if isinstance(v, int) and 400 <= v <= 599), None
    )
    if status is not None:
        return error_for_status(status, body, model=model, base_url=base_url, api_key=api_key, partial=partial)
    said = redact(provider_message(body), api_key)
    hint = f"{fields.get('code', '')} {fields.get('type', '')}".lower()
    if is_context_too_long(None, body):
        kind = "context_too_long"
    elif "rate_limit" in hint:
        kind = "rate_limited"
    elif "api_key" in hint or "auth" in hint:
        kind = "auth"
    elif "invalid_request" in hint:
        kind = "bad_request"
    else:
        kind = "server"
    too_long = kind == "context_too_long"
    return ProviderError(
        kind,
        f"The provider reported an error mid-stream: {said}",
        partial=partial,
        prompt_tokens=refused_prompt_tokens(body) if too_long else None,
        context_window=stated_context_window(body) if too_long else None,
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
