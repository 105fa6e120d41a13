"""A real local HTTP server speaking OpenAI Chat Completions, with scripted answers.

The one thing the project fakes. It validates requests as the real API does (see openai_rules.py), answers
with real SSE framing and can misbehave on cue (errors, cuts, hangs). Stdlib only, so editor tests can run it:

    python tests/fakes/fake_provider.py [--port 0] [--api-key K] [--context-window N] [--ptl-style S]
                                        [--model M ...] [--reject-stream-options] [--script FILE.json]
                                        [--cache-style openai|deepseek|none] [--cached-tokens N]
                                        [--token-factor F]

prints `FAKE_PROVIDER_URL=http://127.0.0.1:PORT/v1` and serves until killed. Control endpoints on the same
port: `POST /_control/push` (JSON item or list, appended), `GET /_control/requests`, `POST /_control/reset`.
Script items are documented in SCRIPT_KEYS (script.py).

Prompt cache (B-CACHE-5), as OpenAI and DeepSeek cache prefixes automatically: every answered request's message
list is remembered (the latest CACHE_MEMORY of them), and a request's cached tokens are the token count (the
fake's own unit, ``openai_rules.estimate_prompt_tokens``: JSON characters / 4) of ``messages[:k]``, where k is
the longest run of leading messages identical (same JSON) to the leading messages of a remembered request. So a
request that extends the previous one reports the previous messages as cached, and one that changes its first
message reports 0. The figure goes in ``usage.prompt_tokens_details.cached_tokens`` (``cache_style="openai"``),
``usage.prompt_cache_hit_tokens`` plus ``prompt_cache_miss_tokens`` (``"deepseek"``) or nowhere (``"none"``);
``cached_tokens=N`` reports N (capped at the prompt) instead of the measured prefix, and a script item's
``usage`` overrides both.

Prompt tokens: JSON characters / 4 of the messages, by default. ``token_factor=F`` counts as a tokenizer unlike the
server's estimate would: F times (JSON characters of the messages and the tool definitions) / 4, rounded up, for
the reported ``prompt_tokens`` and the ``context_window`` check alike.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

try:
    from . import llama_server as llama
    from . import openai_rules as rules
    from .http_double import LocalHttpDouble, wait_until_client_gone
    from .script import SCRIPT_KEYS, ScriptedAnswer, check_item
except ImportError:  # run as a script: no package, stdlib only
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import llama_server as llama  # type: ignore[no-redef]
    import openai_rules as rules  # type: ignore[no-redef]
    from http_double import LocalHttpDouble, wait_until_client_gone  # type: ignore[no-redef]
    from script import SCRIPT_KEYS, ScriptedAnswer, check_item  # type: ignore[no-redef]

__all__ = ["CACHE_STYLES", "SCRIPT_KEYS", "FakeProvider", "check_item", "main"]

CACHE_STYLES = ("openai", "deepseek", "none")
CACHE_MEMORY = 64  # requests remembered for the prompt cache


class FakeProvider(LocalHttpDouble):
    """In-process control of the fake: start/stop (or `with`), `url`, `push`, `requests`, `reset`."""

    def __init__(
        self,
        api_key: str | None = None,
        context_window: int | None = None,
        ptl_style: str = "openai",
        models: list[str] | None = None,
        *,
        reject_stream_options: bool = False,
        cache_style: str = "openai",
        cached_tokens: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        verbose: bool = False,
        answer: Callable[[list[dict[str, Any]]], str | dict[str, Any]] | None = None,
        token_factor: float | None = None,
        llama_server: llama.LlamaServer | None = None,
    ) -> None:
        if ptl_style not in rules.PTL_STYLES:
            raise ValueError(f"unknown ptl_style {ptl_style!r}; expected one of {rules.PTL_STYLES}")
        if cache_style not in CACHE_STYLES:
            raise ValueError(f"unknown cache_style {cache_style!r}; expected one of {CACHE_STYLES}")
        self.api_key = api_key
        self.context_window = context_window
        self.ptl_style = ptl_style
        self.models = list(models) if models is not None else None
        self.reject_stream_options = reject_stream_options
        self.cache_style = cache_style
        self.cached_tokens = cached_tokens
        self.verbose = verbose
        self.token_factor = token_factor
        # an unscripted answer from the request's messages: its text or a whole script item (default: an echo)
        self.answer = answer
        self.llama_server = llama_server  # play llama-server: /props, its shared slots, its 404 (llama_server.py)
        self._init_http(host, port)
        self._lock = threading.Lock()
        self._queue: deque[dict[str, Any]] = deque()
        self._requests: list[dict[str, Any]] = []
        self.gets: list[str] = []  # the GET paths a client asked of the llama-server double (/props)
        self._cache: deque[list[bytes]] = deque(maxlen=CACHE_MEMORY)  # each remembered request's message digests

    thread_name = "fake-provider"

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

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
            self._cache.clear()
        self.gets.clear()

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """What this double counts a request's prompt as (see the module docstring)."""
        if self.token_factor is None:
            return rules.estimate_prompt_tokens(body["messages"])
        chars = len(json.dumps(body["messages"], ensure_ascii=False)) + len(json.dumps(body.get("tools") or []))
        return math.ceil(chars / 4 * self.token_factor)

    def cache_lookup(self, messages: list[Any]) -> int:
        """Tokens of the longest leading run of `messages` some remembered request began with; then remember
        this request too (see the module docstring)."""
        # Digests, not the JSON itself: remembered requests may hold megabytes of images or tool output.
        encoded = [
            hashlib.sha256(json.dumps(m, ensure_ascii=False, sort_keys=True).encode()).digest() for m in messages
        ]
        with self._lock:
            shared = max((_common_prefix(encoded, seen) for seen in self._cache), default=0)
            self._cache.append(encoded)
        if self.cached_tokens is not None:
            return self.cached_tokens
        return rules.estimate_prompt_tokens(messages[:shared]) if shared else 0

    def _record(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(record)

    def _next_item(self) -> dict[str, Any] | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small SSE writes must not wait for delayed ACKs
    server_version = "fake-provider/1.0"

    @property
    def fake(self) -> FakeProvider:
        return self.server.fake  # type: ignore[attr-defined]

    def handle(self) -> None:
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):  # the client went away, as clients may
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:
        if self.fake.verbose:
            sys.stderr.write("fake-provider: " + (format % args) + "\n")

    # -- routing ---------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._read_body()
        if self.path == "/_control/requests":
            return self.send_json(200, self.fake.requests)
        if self.path.rstrip("/") == "/v1/models":
            return self._models()
        if self.path == "/health":  # llama-server's readiness check (bench/local_llama.py waits on it)
            return self.send_json(200, {"status": "ok"})
        if self.path == "/props" and self.fake.llama_server is not None:
            self.fake.gets.append(self.path)
            return self.send_bytes(200, self.fake.llama_server.props(), llama.CONTENT_TYPE, None)
        self._not_found("GET")

    def do_POST(self) -> None:
        raw = self._read_body()
        if self.path.startswith("/_control/"):
            return self._control(raw)
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._not_found("POST")
        self._chat(raw)

    def _not_found(self, method: str) -> None:
        if self.fake.llama_server is not None:
            return self.send_bytes(404, llama.NOT_FOUND, llama.CONTENT_TYPE, None)
        self.send_rejection(rules.Rejection(404, f"Invalid URL ({method} {self.path})"))

    def _control(self, raw: bytes) -> None:
        if self.path == "/_control/reset":
            self.fake.reset()
            return self.send_json(200, {})
        if self.path == "/_control/push":
            try:
                items = json.loads(raw or b"[]")
                self.fake.push(*(items if isinstance(items, list) else [items]))
            except ValueError as exc:
                return self.send_json(400, {"error": str(exc)})
            return self.send_json(200, {"queued": self.fake.pending})
        self.send_json(404, {"error": f"unknown control endpoint {self.path}"})

    def _models(self) -> None:
        try:
            rules.check_auth(self.headers.get("Authorization"), self.fake.api_key)
        except rules.Rejection as rejection:
            return self.send_rejection(rejection)
        names = self.fake.models or ["fake-model"]
        self.send_json(
            200,
            {
                "object": "list",
                "data": [{"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in names],
            },
        )

    def _chat(self, raw: bytes) -> None:
        fake = self.fake
        record: dict[str, Any] = {
            "method": "POST",
            "path": self.path,
            "headers": self._recorded_headers(),
            "body": None,
            "rejected": False,
            "status": 200,
            "error": None,
            "client_closed": False,
            "peer_port": self.client_address[1],
            "received_at": time.time(),  # wall clock, comparable across processes (bench/exec_start.py)
        }
        fake._record(record)
        try:
            rules.check_auth(self.headers.get("Authorization"), fake.api_key)
            body = record["body"] = rules.parse_body(raw)
            rules.check_request(body, models=fake.models)
            if fake.reject_stream_options and "stream_options" in body:
                raise rules.stream_options_unsupported()
            tokens = fake.prompt_tokens(body)
            if fake.llama_server is not None and fake.token_factor is None:
                tokens = fake.llama_server.prompt_tokens(body, tokens)
            if fake.context_window is not None and tokens > fake.context_window:
                raise rules.context_too_long(fake.ptl_style, fake.context_window, tokens)
        except rules.Rejection as rejection:
            record.update(rejected=True, status=rejection.status, error=rejection.message)
            return self.send_rejection(rejection)
        server = fake.llama_server
        held = server.hold(tokens) if server is not None else None
        if server is not None and held is None:  # its slots' shared KV cache is full: this one fails, and the rest
            record.update(rejected=True, status=500, error="Context size has been exceeded.")
            return self.send_bytes(500, llama.CONTEXT_EXCEEDED, llama.CONTENT_TYPE, None)
        try:
            self._answer(body, record, tokens, held)
        finally:
            if server is not None and held is not None:
                server.release(held)

    def _answer(self, body: dict[str, Any], record: dict[str, Any], tokens: int, held: llama.Hold | None) -> None:
        fake = self.fake
        item = fake._next_item()
        if item is None and fake.answer is not None:
            answered = fake.answer(body["messages"])  # the text, or a whole script item
            item = check_item(answered) if isinstance(answered, dict) else {"content": answered}
        elif item is None:
            item = {"content": f"Echo: {_last_user_text(body['messages'])}"}
        cached = fake.cache_lookup(body["messages"])
        ScriptedAnswer(self, record, body, item, tokens, cached, held.evicted if held else None).send()

    # -- I/O helpers -----------------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
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

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self.send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def send_rejection(self, rejection: rules.Rejection) -> None:
        if isinstance(rejection.body, str):
            content_type = "text/html" if rejection.body.lstrip().startswith("<") else "text/plain"
            return self.send_bytes(rejection.status, rejection.body.encode(), content_type, rejection.headers)
        self.send_json(rejection.status, rejection.body, rejection.headers)

    def send_bytes(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(data)

    def client_gone(self, timeout: float | None) -> bool:
        """Wait up to `timeout` seconds (None: forever); True as soon as the client closes or we stop."""
        return wait_until_client_gone(self.connection, self.fake._stopping, timeout)


def _common_prefix(a: list[bytes], b: list[bytes]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


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
    parser.add_argument(
        "--cache-style",
        default="openai",
        choices=CACHE_STYLES,
        help="where to report cached prompt tokens (see the module docstring)",
    )
    parser.add_argument("--cached-tokens", type=int, help="report this many cached tokens on every answer")
    parser.add_argument("--token-factor", type=float, help="count prompts at F x (messages + tools) chars/4")
    parser.add_argument("--script", help="JSON file holding a list of script items to queue")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    args = parser.parse_args(argv)
    fake = FakeProvider(
        api_key=args.api_key,
        context_window=args.context_window,
        ptl_style=args.ptl_style,
        models=args.models,
        reject_stream_options=args.reject_stream_options,
        cache_style=args.cache_style,
        cached_tokens=args.cached_tokens,
        token_factor=args.token_factor,
        port=args.port,
        verbose=args.verbose,
    )
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
