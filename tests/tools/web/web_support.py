"""Real HTTP on 127.0.0.1 for the web tools' tests: a page server, a listener that records whether anything
connected, and a record of every socket connect this process makes (a Python audit hook), which also stops any
connect to an address outside the loopback range: these tests never send traffic anywhere else."""

from __future__ import annotations

import contextlib
import ipaddress
import select
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (status, headers, body) or a callable writing the answer itself through the handler
Answer = tuple[int, dict[str, str], bytes] | Callable[[BaseHTTPRequestHandler], None]

_connects: list[Any] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "socket.connect" or _connects is None:
        return
    address = args[1]
    _connects.append(address)
    if isinstance(address, tuple):
        host = str(address[0]).split("%")[0]
        if not ipaddress.ip_address(host).is_loopback:
            raise ConnectionRefusedError(f"a test tried to connect to {address}: only loopback is allowed")


sys.addaudithook(_audit)


@contextlib.contextmanager
def recorded_connects() -> Iterator[list[Any]]:
    """Every ``socket.connect`` this process makes inside the block, in order, as ``(host, port, ...)``."""
    global _connects
    seen: list[Any] = []
    _connects = seen
    try:
        yield seen
    finally:
        _connects = None


@dataclass
class PageServer:
    """A threaded HTTP server on 127.0.0.1 answering ``routes`` by path (query left out); 404 otherwise."""

    routes: dict[str, Answer]
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                answer = owner.routes.get(self.path.split("?")[0])
                if answer is None:
                    answer = (404, {"Content-Type": "text/plain"}, b"not here")
                if callable(answer):
                    with contextlib.suppress(OSError):  # the client may stop reading (a body over the cap)
                        answer(self)
                    return
                status, headers, body = answer
                self.send_response(status)
                for key, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(key, value)
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def serving(routes: Mapping[str, Answer]) -> Iterator[PageServer]:
    server = PageServer(dict(routes))
    try:
        yield server
    finally:
        server.close()


class Listener:
    """A listening socket on 127.0.0.1 that nothing accepts from: a connection made to it waits in its queue, so
    ``connected()`` tells whether anything connected at all."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]

    def connected(self) -> bool:
        ready, _, _ = select.select([self.sock], [], [], 0.3)  # loopback connects are queued at once; a margin
        return bool(ready)

    def close(self) -> None:
        self.sock.close()


@contextlib.contextmanager
def listening() -> Iterator[Listener]:
    listener = Listener()
    try:
        yield listener
    finally:
        listener.close()


def html(body: str, title: str = "Page") -> tuple[int, dict[str, str], bytes]:
    page = f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
    return 200, {"Content-Type": "text/html; charset=utf-8"}, page.encode()


def redirect(location: str, status: int = 302) -> tuple[int, dict[str, str], bytes]:
    return status, {"Location": location}, b""
