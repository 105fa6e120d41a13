"""The HTTP half of the native-API doubles (fake_anthropic.py, fake_responses.py): a real local server, a script
queue, recorded requests and SSE writing. Each double supplies ``path``, ``check`` (reject as the real API does)
and ``answer`` (the event stream). Stdlib only.

A script item with ``hang: true`` (any double) is answered with the stream's headers and then nothing until the
client goes away, as a stalled upstream would (a test holds a turn open with it, then cancels it); ``delay:
seconds`` waits that long before the answer starts, as a slow first token does (a client hanging up ends it).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from .http_double import LocalHttpDouble, wait_until_client_gone


def echo(messages: list[dict[str, Any]]) -> str:
    """An unscripted answer, as the Chat Completions fake gives: ``Echo: <the last user text>``."""
    texts = [m["content"] for m in messages if m["role"] == "user" and isinstance(m.get("content"), str)]
    return f"Echo: {texts[-1]}" if texts else "Echo."


DELAY = "__delay__"  # a pseudo-event in an answer: the handler waits ``seconds`` before the next frame


def paced(events: list[tuple[str, dict]], delay: float | None) -> list[tuple[str, dict]]:
    """``events`` with a wait after each (a script item's ``chunk_delay``), so a test can cancel mid-stream."""
    if not delay:
        return events
    return [e for event in events for e in (event, (DELAY, {"seconds": delay}))]


def _raw_arguments(arguments: Any) -> str:
    """A script's tool arguments as streamed: a dict as JSON, a string unchanged (so a test can send broken JSON)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


class Rejection(Exception):
    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
        super().__init__(json.dumps(body))
        self.status, self.body, self.headers = status, body, headers or {}


def digest(value: Any) -> bytes:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).digest()


def tokens_of(value: Any) -> int:
    """The doubles' token unit, as the Chat Completions fake's: JSON characters / 4."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


class NativeFake(LocalHttpDouble):
    path = ""

    def __init__(self, api_key: str | None = None, context_window: int | None = None) -> None:
        self.api_key = api_key
        self.context_window = context_window
        self._lock = threading.Lock()
        self._queue: deque[dict[str, Any]] = deque()
        self._requests: list[dict[str, Any]] = []
        self._init_http()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    def push(self, *items: dict[str, Any]) -> None:
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        """Script items not yet answered."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._requests]

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self.forget()

    def next_item(self) -> dict[str, Any]:
        with self._lock:
            return self._queue.popleft() if self._queue else {}

    # -- per API --------------------------------------------------------------------------------------------
    def forget(self) -> None:
        """Drop the simulated prompt cache and any other memory of earlier requests."""

    def check(self, headers: dict[str, str], body: Any) -> None:
        raise NotImplementedError

    def answer(self, body: dict[str, Any], item: dict[str, Any], record: dict[str, Any]) -> list[tuple[str, dict]]:
        """The (event name, data) pairs of the streamed answer; may raise Rejection for a scripted error."""
        raise NotImplementedError


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake: NativeFake = self.server.fake  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        record: dict[str, Any] = {
            "path": self.path,
            "headers": {k: v for k, v in headers.items() if k not in ("authorization", "x-api-key")},
            "body": None,
            "rejected": False,
            "status": 200,
            "error": None,
        }
        with fake._lock:
            fake._requests.append(record)
        try:
            if self.path.rstrip("/") != f"/v1{fake.path}":
                raise Rejection(404, {"error": {"type": "not_found_error", "message": f"Not Found: {self.path}"}})
            try:
                body = record["body"] = json.loads(raw)
            except ValueError:
                raise Rejection(
                    400, {"error": {"type": "invalid_request_error", "message": "There was an error parsing the body"}}
                ) from None
            fake.check(headers, body)
            item = fake.next_item()
            events = [] if item.get("hang") else fake.answer(body, item, record)
            if item.get("delay") and self._wait_until_client_gone(fake._stopping, float(item["delay"])):
                record["disconnected"] = True
                return
        except Rejection as rejection:
            record.update(rejected=True, status=rejection.status, error=rejection.body)
            return self._send_json(rejection.status, rejection.body, rejection.headers)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if item.get("hang"):
            self.wfile.flush()
            self._wait_until_client_gone(fake._stopping)
            record["disconnected"] = True
            self.close_connection = True
            return
        try:
            for name, data in events:
                if name == DELAY:
                    self.wfile.flush()
                    time.sleep(data["seconds"])
                    continue
                frame = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (ConnectionResetError, BrokenPipeError):  # the client hung up mid-stream (a cancelled turn)
            record["disconnected"] = True

    def _wait_until_client_gone(self, stopping: threading.Event, timeout: float | None = None) -> bool:
        return wait_until_client_gone(self.connection, stopping, timeout)

    def _send_json(self, status: int, body: Any, headers: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
