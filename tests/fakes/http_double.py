"""The lifecycle every local model double shares: a ``ThreadingHTTPServer`` on loopback, served from a daemon thread.

Stdlib only, so ``fake_provider.py`` still runs as a script. A double subclasses ``LocalHttpDouble``, calls
``_init_http`` from its ``__init__`` and names its request handler in ``_handler_class``; the handler finds the
double as ``self.server.fake``.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

__all__ = ["LocalHttpDouble", "wait_until_client_gone"]


def wait_until_client_gone(connection: socket.socket, stopping: threading.Event, timeout: float | None) -> bool:
    """Wait up to ``timeout`` seconds (None: for ever); True as soon as the client hangs up or ``stopping`` is set."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not stopping.is_set():
        left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
        if left <= 0:
            return False
        readable, _, _ = select.select([connection], [], [], left)
        if not readable:
            continue
        try:
            if not connection.recv(1, socket.MSG_PEEK):
                return True
        except OSError:
            return True
        time.sleep(left)  # the client sent more bytes; not an EOF, avoid spinning
    return True


class LocalHttpDouble:
    """start/stop (or ``with``), ``port`` and ``url``; ``stop`` also sets ``_stopping``, which ends hangs and delays."""

    thread_name = "http-double"

    def _init_http(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._address = (host, port)
        self._server: ThreadingHTTPServer | None = None
        self._stopping = threading.Event()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        self._stopping.clear()
        server = ThreadingHTTPServer(self._address, self._handler_class())
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the double first"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"
