"""Scripted answers of the model-service double: the item format and how one item is written to the socket.

Stdlib only, like the rest of the double.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
import uuid
from typing import Any

try:
    from . import llama_server as llama
    from . import openai_rules as rules
except ImportError:  # run as a script: no package, stdlib only
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import llama_server as llama  # type: ignore[no-redef]
    import openai_rules as rules  # type: ignore[no-redef]

SCRIPT_KEYS = {
    "content": "assistant text",
    "chunks": "how many deltas to split content and reasoning into (default 3)",
    "reasoning": "reasoning text, streamed before the content",
    "reasoning_field": "'reasoning_content' (default, DeepSeek) or 'reasoning' (OpenRouter, vLLM)",
    "tool_calls": "[{id, name, arguments: dict or JSON string}]",
    "tool_call_style": "'fragments' (default, like OpenAI), 'whole' (one chunk per call) or 'no_index'",
    "arg_chunks": "how many fragments to stream each call's arguments in (default 3)",
    "finish_reason": "override ('stop', or 'tool_calls' when there are tool calls)",
    "usage": "fields overriding the estimated usage (and the measured cached tokens)",
    "error": "{status, body?, headers?, in_stream?}: answer with this error instead",
    "ptl": "true: answer this provider's context-too-long 400",
    "delay": "seconds to wait before sending headers",
    "chunk_delay": "seconds to wait between stream chunks (the role chunk and the first delta go together)",
    "cut_after_chunks": "close the socket after this many data events (all counted), mid-way through the next",
    "framing": "'chunked' (default) or 'close' (no length, the end of the body is the socket closing)",
    "malformed_chunk": "true: send an unparseable data line after the content",
    "empty_choices": "true: stream only chunks with empty choices",
    "no_stream": "true: ignore `stream` and answer one plain JSON completion",
    "hang": "true: send headers then nothing until the client goes away",
}


def check_item(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ValueError(f"a script item must be an object, got {item!r}")
    unknown = set(item) - set(SCRIPT_KEYS)
    if unknown:
        raise ValueError(f"unknown script keys {sorted(unknown)}; known: {sorted(SCRIPT_KEYS)}")
    return item


def _within_output_limit(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """As a real server does with ``max_tokens`` (``max_completion_tokens``): a text answer longer than the limit
    (4 characters a token) stops there with ``finish_reason: "length"``."""
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    content = item.get("content")
    if (
        not isinstance(limit, int)
        or not isinstance(content, str)
        or item.get("tool_calls")
        or len(content) <= limit * 4
    ):
        return item
    return {**item, "content": content[: limit * 4], "finish_reason": "length"}


class ScriptedAnswer:
    """One scripted answer, written to the socket through the fake's request handler."""

    def __init__(
        self,
        handler: Any,
        record: dict[str, Any],
        body: dict[str, Any],
        item: dict[str, Any],
        prompt_tokens: int,
        cached_tokens: int = 0,
        evicted: threading.Event | None = None,
    ) -> None:
        self.handler = handler
        self.evicted = evicted  # playing llama-server: set when another request overfilled the shared cache
        self.record = record
        self.body = body
        self.item = _within_output_limit(item, body)
        self.prompt_tokens = prompt_tokens
        self.cached_tokens = min(max(0, cached_tokens), prompt_tokens)
        self.model = body["model"]
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self.chunked = item.get("framing", "chunked") == "chunked"

    def send(self) -> None:
        item, handler = self.item, self.handler
        try:
            if item.get("delay") and self._wait(float(item["delay"])):
                return self._client_closed()
            if self.evicted is not None and self.evicted.is_set():  # failed before its first token: an HTTP 500
                self.record.update(rejected=True, status=500, error="Context size has been exceeded.")
                return handler.send_bytes(500, llama.CONTEXT_EXCEEDED, llama.CONTENT_TYPE, None)
            error = item.get("error")
            if item.get("ptl"):
                window = self.handler.fake.context_window or 4096
                return self._reject(rules.context_too_long(handler.fake.ptl_style, window, self.prompt_tokens))
            if error and not error.get("in_stream"):
                return self._reject(self._scripted_error(error))
            if item.get("no_stream") or not self.body.get("stream"):
                return self._send_completion()
            self._send_stream()
        except (BrokenPipeError, ConnectionResetError):
            self._client_closed()

    def _wait(self, seconds: float) -> bool:
        """Wait ``seconds`` (cut short when the request is evicted); True: the client went away meanwhile."""
        if self.evicted is None:
            return bool(self.handler.client_gone(seconds))
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and not self.evicted.is_set():
            if self.handler.client_gone(min(left, 0.05)):
                return True
        return False

    def _reject(self, rejection: rules.Rejection) -> None:
        self.record.update(status=rejection.status, error=rejection.message)
        self.handler.send_rejection(rejection)

    def _scripted_error(self, error: dict[str, Any]) -> rules.Rejection:
        status = int(error.get("status", 500))
        rejection = rules.scripted_error(status, self.model)
        if "body" in error:
            rejection.body = error["body"]
        rejection.headers = {str(k): str(v) for k, v in (error.get("headers") or {}).items()}
        return rejection

    def _error_in_stream(self, error: dict[str, Any]) -> Any:
        if "body" in error:
            return error["body"]
        rejection = rules.scripted_error(int(error.get("status", 500)), self.model)
        return {"error": {"code": rejection.status, "message": rejection.message}}

    def _client_closed(self) -> None:
        self.record["client_closed"] = True
        self.handler.close_connection = True

    # -- the answer's content --------------------------------------------------------------------------
    def _tool_calls(self) -> list[dict[str, Any]]:
        calls = []
        for n, call in enumerate(self.item.get("tool_calls") or []):
            arguments = call.get("arguments", {})
            calls.append(
                {
                    "id": call.get("id", f"call_{n}"),
                    "name": call["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                }
            )
        return calls

    def _finish_reason(self) -> str:
        return self.item.get("finish_reason") or ("tool_calls" if self.item.get("tool_calls") else "stop")

    def _usage(self) -> dict[str, Any]:
        produced = (
            self.item.get("content", "")
            + self.item.get("reasoning", "")
            + "".join(call["arguments"] for call in self._tool_calls())
        )
        usage: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": math.ceil(len(produced) / 4)}
        style = self.handler.fake.cache_style
        if style == "openai":  # the shape OpenAI sends
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens, "audio_tokens": 0}
        elif style == "deepseek":
            usage["prompt_cache_hit_tokens"] = self.cached_tokens
            usage["prompt_cache_miss_tokens"] = self.prompt_tokens - self.cached_tokens
        usage.update(self.item.get("usage") or {})
        usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
        self.record["usage"] = usage
        return usage

    def _send_completion(self) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": self.item.get("content")}
        if self.item.get("reasoning"):
            message[self.item.get("reasoning_field", "reasoning_content")] = self.item["reasoning"]
        calls = self._tool_calls()
        if calls:
            message["tool_calls"] = [_call_json(call) for call in calls]
        choices = (
            []
            if self.item.get("empty_choices")
            else [{"index": 0, "message": message, "logprobs": None, "finish_reason": self._finish_reason()}]
        )
        self.handler.send_json(
            200,
            {
                "id": self.id,
                "object": "chat.completion",
                "created": self.created,
                "model": self.model,
                "choices": choices,
                "usage": self._usage(),
            },
        )

    def _events(self) -> list[str]:
        """Every `data:` payload of the stream, in order, ending with [DONE]."""
        item = self.item
        include_usage = bool((self.body.get("stream_options") or {}).get("include_usage"))
        events: list[str] = []

        def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> None:
            payload: dict[str, Any] = {
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "system_fingerprint": "fp_fake",
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            if include_usage:
                payload["usage"] = None
            events.append(json.dumps(payload))

        if not item.get("empty_choices"):
            chunk({"role": "assistant", "content": "", "refusal": None})
            field = item.get("reasoning_field", "reasoning_content")
            for piece in _split(item.get("reasoning", ""), item.get("chunks", 3)):
                chunk({field: piece})
            for piece in _split(item.get("content", ""), item.get("chunks", 3)):
                chunk({"content": piece})
            for delta in self._call_deltas():
                chunk(delta)
            if item.get("malformed_chunk"):
                events.append('{"id": "' + self.id + '", "choices": [{"delta": {"content": "unterminated')
            if item.get("error"):  # an error reported inside the stream, as OpenRouter does
                events.append(json.dumps(self._error_in_stream(item["error"])))
                return events
            chunk({}, self._finish_reason())
        if include_usage:
            events.append(
                json.dumps(
                    {
                        "id": self.id,
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "choices": [],
                        "usage": self._usage(),
                    }
                )
            )
        events.append("[DONE]")
        return events

    def _call_deltas(self) -> list[dict[str, Any]]:
        style = self.item.get("tool_call_style", "fragments")
        deltas = []
        for index, call in enumerate(self._tool_calls()):
            if style in ("whole", "no_index"):
                fragment = {"index": index, **_call_json(call)}
                if style == "no_index":
                    del fragment["index"]
                deltas.append({"tool_calls": [fragment]})
                continue
            deltas.append(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": ""},
                        }
                    ]
                }
            )
            for piece in _split(call["arguments"], self.item.get("arg_chunks", 3)):
                deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        return deltas

    def _send_stream(self) -> None:
        handler, item = self.handler, self.item
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        if self.chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        handler.wfile.flush()
        if item.get("hang"):
            handler.client_gone(None)
            return self._client_closed()
        cut_after = item.get("cut_after_chunks")
        for n, data in enumerate(self._events()):
            frame = f"data: {data}\n\n".encode()
            if n > 1 and item.get("chunk_delay") and self._wait(float(item["chunk_delay"])):
                return self._client_closed()
            if self.evicted is not None and self.evicted.is_set():  # streaming: the error is the last event
                self.record.update(status=500, error="Context size has been exceeded.", evicted=True)
                self._write(b"data: " + llama.CONTEXT_EXCEEDED + b"\n\n")
                break
            if cut_after is not None and n >= cut_after:
                self._write(frame, cut=True)
                handler.close_connection = True
                self.record["cut"] = True
                return
            self._write(frame)
        if self.chunked:
            handler.wfile.write(b"0\r\n\r\n")

    def _write(self, frame: bytes, cut: bool = False) -> None:
        """Write one SSE frame; when cut, write only its first half (the socket is then closed)."""
        wfile = self.handler.wfile
        if self.chunked:
            wfile.write(f"{len(frame):x}\r\n".encode() + (frame[: len(frame) // 2] if cut else frame + b"\r\n"))
        else:
            wfile.write(frame[: len(frame) // 2] if cut else frame)
        wfile.flush()


def _call_json(call: dict[str, Any]) -> dict[str, Any]:
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}


def _split(text: str, parts: int) -> list[str]:
    if not text:
        return []
    parts = max(1, min(int(parts), len(text)))
    size = math.ceil(len(text) / parts)
    return [text[i : i + size] for i in range(0, len(text), size)]
