"""``threadline serve --tcp``: the same server on 127.0.0.1 only, guarded by a token.

At start a random token is written to ``$THREADLINE_HOME/tcp-token`` (mode 0600) and one line,
``THREADLINE_TCP_PORT=<port>``, is printed on stdout before serving. A client passes the token in
``initializationOptions.token``; a wrong or missing one is answered -32001 and the connection closed, and any
request before a successful ``initialize`` gets -32002, so no method runs for a stranger. One connection is
served at a time (each with a fresh server state).

A connection is admitted before it takes that one slot: a doorman reads its messages, small ones only
(``PREAUTH_MAX_BYTES``), until an ``initialize`` carrying the token, within ``AUTH_TIMEOUT`` seconds in all.
Idle or slow strangers are closed at the deadline and never make the real client wait behind them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

from server.config import Settings
from server.edge.errors import INVALID_REQUEST, PARSE_ERROR, WireError
from server.edge.gate import UNAUTHORIZED, carries_token, error_response, gate
from server.edge.transport import EOF_, PREAUTH_MAX_BYTES, FrameError, frame, read_message
from server.errors import StorageFailure
from server.private_files import private_folder

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
AUTH_TIMEOUT = 5.0  # seconds a new connection has to send initialize with the token
PREAUTH_MAX_MESSAGES = 32
NULL_ID = WireError(INVALID_REQUEST, "invalid request: id must be a string or an integer, not null", {})


def write_token(home: Path) -> str:
    """A new random token in ``home/tcp-token``, readable by its owner only (written whole, then renamed)."""
    token = secrets.token_urlsafe(32)
    path, tmp = home / "tcp-token", home / ".tcp-token.partial"
    try:
        private_folder(home)
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(token)
        os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to a file that already existed
        os.replace(tmp, path)
    except OSError as exc:
        raise StorageFailure(f"cannot write the TCP token to {path}: {exc}") from exc
    return token


async def _admit(token: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> dict[str, Any] | None:
    """The connection's ``initialize`` if it carries the token, else None (refused, silent too long, or gone).

    Before it, requests are answered -32002 and notifications dropped, exactly as the server's gate would."""

    def reply(msg_id: Any, refusal: WireError) -> None:
        writer.write(frame(json.dumps(error_response(msg_id, refusal)).encode()))

    def reject(exc: FrameError) -> None:
        if exc.msg_id is not None or exc.code in (PARSE_ERROR, INVALID_REQUEST):
            reply(exc.msg_id, WireError(exc.code, exc.message, {}))

    try:
        async with asyncio.timeout(AUTH_TIMEOUT):
            for _ in range(PREAUTH_MAX_MESSAGES):
                message = await read_message(reader, reject, PREAUTH_MAX_BYTES)
                if message is EOF_:
                    return None
                if message is None or "method" not in message:
                    continue
                if "id" in message and message["id"] is None:
                    reply(None, NULL_ID)
                elif message["method"] == "initialize" and "id" in message:
                    if carries_token(message.get("params"), token):
                        return message  # type: ignore[no-any-return]
                    reply(message["id"], UNAUTHORIZED)
                    return None
                elif message["method"] == "exit":
                    return None
                elif "id" in message and (refusal := gate(message["method"], initialized=False)) is not None:
                    reply(message["id"], refusal)
                await writer.drain()
    except TimeoutError:
        log.warning("closed a TCP client that did not authenticate within %.0f s", AUTH_TIMEOUT)
    except (ConnectionError, OSError):
        pass
    return None


async def _serve_connection(
    settings: Settings,
    token: str,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    first: dict[str, Any],
    live: set[Any],
) -> None:
    from server.edge.app import ThreadlineServer

    server = ThreadlineServer(settings)
    server.tcp_token = token
    live.add(server)
    try:
        await server.serve(reader, writer.write, first)
    except Exception:
        log.exception("the TCP connection failed")
    finally:
        live.discard(server)


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


async def _main(settings: Settings, port: int) -> int:
    token = write_token(settings.home)
    one_at_a_time = asyncio.Lock()
    live: set[Any] = set()  # the connection being served: told to exit on SIGTERM, so its runtime closes cleanly
    stop = asyncio.get_running_loop().create_future()

    def on_signal(signum: int) -> None:
        for server in list(live):
            server.request_exit(128 + signum)
        if not stop.done():
            stop.set_result(128 + signum)

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await _admit(token, reader, writer)
            if first is not None:
                async with one_at_a_time:  # only an authenticated client ever waits for, or holds, the slot
                    await _serve_connection(settings, token, reader, writer, first, live)
        finally:
            await _close(writer)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        asyncio.get_running_loop().add_signal_handler(signum, on_signal, signum)
    listener = await asyncio.start_server(on_connect, HOST, port, limit=1 << 16)
    bound = listener.sockets[0].getsockname()[1]
    print(f"THREADLINE_TCP_PORT={bound}", flush=True)
    log.warning("listening on %s:%d (token in %s)", HOST, bound, settings.home / "tcp-token")
    async with listener:
        code = await stop
        while live:  # let the connection's runtime close (turns cancelled, commands' groups killed)
            await asyncio.sleep(0.05)
    return int(code)


def serve_tcp(settings: Settings, port: int) -> int:
    try:
        return asyncio.run(_main(settings, port))
    except KeyboardInterrupt:
        return 0
    finally:
        sys.stdout.flush()
