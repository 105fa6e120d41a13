"""A real local HTTP server speaking OpenAI Chat Completions, with scripted answers.

The one thing the project fakes. It validates requests as the real API does (see openai_rules.py), answers
with real SSE framing and can misbehave on cue (errors, cuts, hangs). Stdlib only, so editor tests can run it:

    python tests/fakes/fake_provider.py [--port 0] [--api-key K] [--context-window N] [--ptl-style S]
                                        [--model M ...] [--reject-stream-options] [--script FILE.json]

prints `FAKE_PROVIDER_URL=http://127.0.0.1:PORT/v1` and serves until killed. Control endpoints on the same
port: `POST /_control/push` (JSON item or list, appended), `GET /_control/requests`, `POST /_control/reset`.
Script items are documented in SCRIPT_KEYS below.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import select
import socket
import sys
import threading
import time
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:
    from . import openai_rules as rules
except ImportError:  # run as a script: no package, stdlib only
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
    "usage": "fields overriding the estimated usage",
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


class FakeProvider:
    """In-process control of the fake: start/stop (or `with`), `url`, `push`, `requests`, `reset`."""

    def __init__(self, api_key: str | None = None, context_window: int | None = None, ptl_style: str = "openai",
                 models: list[str] | None = None, *, reject_stream_options: bool = False,
                 host: str = "127.0.0.1", port: int = 0, verbose: bool = False) -> None:
        if ptl_style not in rules.PTL_STYLES:
            raise ValueError(f"unknown ptl_style {ptl_style!r}; expected one of {rules.PTL_STYLES}")
        self.api_key = api_key
        self.context_window = context_window
        self.ptl_style = ptl_style
        self.models = list(models) if models is not None else None
        self.reject_stream_options = reject_stream_options
        self.verbose = verbose
        self._address = (host, port)
        self._lock = threading.Lock()
        self._queue: deque[dict[str, Any]] = deque()
        self._requests: list[dict[str, Any]] = []
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> "FakeProvider":
        self._stopping.clear()
        server = ThreadingHTTPServer(self._address, _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # ends hangs and delays
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeProvider":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the fake first"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script and records ----------------------------------------------------------------------------
    def push(self, *items: dict[str, Any]) -> None:
        checked = [check_item(item) for item in items]
        with self._lock:
            self._queue.extend(checked)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(record) for record in self._requests]

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    def _record(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(record)

    def _next_item(self) -> dict[str, Any] | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-provider/1.0"

    @property
    def fake(self) -> FakeProvider:
        return self.server.fake  # type: ignore[attr-defined]

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            pass  # the client went away, as clients may

    def log_message(self, format: str, *args: Any) -> None:
        if self.fake.verbose:
            sys.stderr.write("fake-provider: " + (format % args) + "\n")

    # -- routing ---------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._read_body()
        if self.path == "/_control/requests":
            return self._send_json(200, self.fake.requests)
        if self.path.rstrip("/") == "/v1/models":
            return self._models()
        self._send_rejection(rules.Rejection(404, f"Invalid URL (GET {self.path})"))

    def do_POST(self) -> None:
        raw = self._read_body()
        if self.path.startswith("/_control/"):
            return self._control(raw)
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send_rejection(rules.Rejection(404, f"Invalid URL (POST {self.path})"))
        self._chat(raw)

    def _control(self, raw: bytes) -> None:
        if self.path == "/_control/reset":
            self.fake.reset()
            return self._send_json(200, {})
        if self.path == "/_control/push":
            try:
                items = json.loads(raw or b"[]")
                self.fake.push(*(items if isinstance(items, list) else [items]))
            except ValueError as exc:
                return self._send_json(400, {"error": str(exc)})
            return self._send_json(200, {"queued": self.fake.pending})
        self._send_json(404, {"error": f"unknown control endpoint {self.path}"})

    def _models(self) -> None:
        try:
            rules.check_auth(self.headers.get("Authorization"), self.fake.api_key)
        except rules.Rejection as rejection:
            return self._send_rejection(rejection)
        names = self.fake.models or ["fake-model"]
        self._send_json(200, {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in names]})

    def _chat(self, raw: bytes) -> None:
        fake = self.fake
        record: dict[str, Any] = {"method": "POST", "path": self.path, "headers": self._recorded_headers(),
                                  "body": None, "rejected": False, "status": 200, "error": None,
                                  "client_closed": False, "peer_port": self.client_address[1]}
        fake._record(record)
        try:
            rules.check_auth(self.headers.get("Authorization"), fake.api_key)
            body = record["body"] = rules.parse_body(raw)
            rules.check_request(body, models=fake.models)
            if fake.reject_stream_options and "stream_options" in body:
                raise rules.stream_options_unsupported()
            tokens = rules.estimate_prompt_tokens(body["messages"])
            if fake.context_window is not None and tokens > fake.context_window:
                raise rules.context_too_long(fake.ptl_style, fake.context_window, tokens)
        except rules.Rejection as rejection:
            record.update(rejected=True, status=rejection.status, error=rejection.message)
            return self._send_rejection(rejection)
        item = fake._next_item()
        if item is None:
            item = {"content": f"Echo: {_last_user_text(body['messages'])}"}
        _Answer(self, record, body, item, tokens).send()

    # -- I/O helpers -----------------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _recorded_headers(self) -> dict[str, str]:
        headers = {key.lower(): value for key, value in self.headers.items()}
        if "authorization" in headers:
            headers["authorization"] = "<redacted>"
        return headers

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_rejection(self, rejection: rules.Rejection) -> None:
        if isinstance(rejection.body, str):
            content_type = "text/html" if rejection.body.lstrip().startswith("<") else "text/plain"
            return self._send_bytes(rejection.status, rejection.body.encode(), content_type, rejection.headers)
        self._send_json(rejection.status, rejection.body, rejection.headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(data)

    def client_gone(self, timeout: float | None) -> bool:
        """Wait up to `timeout` seconds (None: forever); True as soon as the client closes or we stop."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.fake._stopping.is_set():
            left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
            if left <= 0:
                return False
            readable, _, _ = select.select([self.connection], [], [], left)
            if readable:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
                time.sleep(left)  # the client sent more bytes; not an EOF, avoid spinning
        return True


class _Answer:
    """One scripted answer, written to the socket."""

    def __init__(self, handler: _Handler, record: dict[str, Any], body: dict[str, Any], item: dict[str, Any],
                 prompt_tokens: int) -> None:
        self.handler = handler
        self.record = record
        self.body = body
        self.item = item
        self.prompt_tokens = prompt_tokens
        self.model = body["model"]
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self.chunked = item.get("framing", "chunked") == "chunked"

    def send(self) -> None:
        item, handler = self.item, self.handler
        try:
            if item.get("delay") and handler.client_gone(float(item["delay"])):
                return self._client_closed()
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

    def _reject(self, rejection: rules.Rejection) -> None:
        self.record.update(status=rejection.status, error=rejection.message)
        self.handler._send_rejection(rejection)

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
            calls.append({"id": call.get("id", f"call_{n}"), "name": call["name"],
                          "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)})
        return calls

    def _finish_reason(self) -> str:
        return self.item.get("finish_reason") or ("tool_calls" if self.item.get("tool_calls") else "stop")

    def _usage(self) -> dict[str, int]:
        produced = self.item.get("content", "") + self.item.get("reasoning", "") + \
            "".join(call["arguments"] for call in self._tool_calls())
        usage = {"prompt_tokens": self.prompt_tokens, "completion_tokens": math.ceil(len(produced) / 4)}
        usage.update(self.item.get("usage") or {})
        usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
        return usage

    def _send_completion(self) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": self.item.get("content")}
        if self.item.get("reasoning"):
            message[self.item.get("reasoning_field", "reasoning_content")] = self.item["reasoning"]
        calls = self._tool_calls()
        if calls:
            message["tool_calls"] = [_call_json(call) for call in calls]
        choices = [] if self.item.get("empty_choices") else [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": self._finish_reason()}]
        self.handler._send_json(200, {"id": self.id, "object": "chat.completion", "created": self.created,
                                      "model": self.model, "choices": choices, "usage": self._usage()})

    def _events(self) -> list[str]:
        """Every `data:` payload of the stream, in order, ending with [DONE]."""
        item = self.item
        include_usage = bool((self.body.get("stream_options") or {}).get("include_usage"))
        events: list[str] = []

        def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> None:
            payload: dict[str, Any] = {
                "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "system_fingerprint": "fp_fake",
                "choices": [] if delta is None else [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
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
            events.append(json.dumps({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                      "model": self.model, "choices": [], "usage": self._usage()}))
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
            deltas.append({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                           "function": {"name": call["name"], "arguments": ""}}]})
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
            if n > 1 and item.get("chunk_delay") and handler.client_gone(float(item["chunk_delay"])):
                return self._client_closed()
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
    return [text[i:i + size] for i in range(0, len(text), size)]


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
            return content or ""
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A local OpenAI-compatible model service double.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key")
    parser.add_argument("--context-window", type=int)
    parser.add_argument("--ptl-style", default="openai", choices=rules.PTL_STYLES)
    parser.add_argument("--model", action="append", dest="models", help="allow only these models (repeatable)")
    parser.add_argument("--reject-stream-options", action="store_true")
    parser.add_argument("--script", help="JSON file holding a list of script items to queue")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    args = parser.parse_args(argv)
    fake = FakeProvider(api_key=args.api_key, context_window=args.context_window, ptl_style=args.ptl_style,
                        models=args.models, reject_stream_options=args.reject_stream_options, port=args.port,
                        verbose=args.verbose)
    if args.script:
        with open(args.script, encoding="utf-8") as handle:
            items = json.load(handle)
        fake.push(*(items if isinstance(items, list) else [items]))
    fake.start()
    print(f"FAKE_PROVIDER_URL={fake.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
