"""``threadline serve --tcp``: the same server on 127.0.0.1 only, guarded by a token.

At start a random token is written to ``$THREADLINE_HOME/tcp-token`` (mode 0600) and one line,
``THREADLINE_TCP_PORT=<port>``, is printed on stdout before serving. A client passes the token in
``initializationOptions.token``; a wrong or missing one is answered -32001 and the connection closed, and any
request before a successful ``initialize`` gets -32002, so no method runs for a stranger. One connection is
served at a time (each with a fresh server state); a connection that has not initialized within
``AUTH_TIMEOUT`` seconds is dropped so it cannot hold the port.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import sys
from pathlib import Path

from server.config import Settings
from server.transcript import StorageFailure

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
AUTH_TIMEOUT = 10.0


def write_token(home: Path) -> str:
    """A new random token in ``home/tcp-token``, readable by its owner only (written whole, then renamed)."""
    token = secrets.token_urlsafe(32)
    path, tmp = home / "tcp-token", home / ".tcp-token.partial"
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(token)
        os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to a file that already existed
        os.replace(tmp, path)
    except OSError as exc:
        raise StorageFailure(f"cannot write the TCP token to {path}: {exc}") from exc
    return token


async def _serve_connection(settings: Settings, token: str, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> None:
    from server.app import ThreadlineServer

    server = ThreadlineServer(settings)
    server.tcp_token = token
    serving = asyncio.create_task(server.serve(reader, writer.write))
    try:
        await _drop_if_silent(server, serving)
        await serving
    except Exception:
        log.exception("the TCP connection failed")
    finally:
        serving.cancel()
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass


async def _drop_if_silent(server, serving: asyncio.Task) -> None:
    """Cancel ``serving`` if the client has not initialized within ``AUTH_TIMEOUT`` seconds."""
    deadline = asyncio.get_running_loop().time() + AUTH_TIMEOUT
    while not serving.done() and not server.initialized:
        if asyncio.get_running_loop().time() > deadline:
            log.warning("dropped a TCP client that did not initialize within %.0f s", AUTH_TIMEOUT)
            server.request_exit(1)
            return
        await asyncio.sleep(0.05)


async def _main(settings: Settings, port: int) -> int:
    token = write_token(settings.home)
    one_at_a_time = asyncio.Lock()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with one_at_a_time:
            await _serve_connection(settings, token, reader, writer)

    listener = await asyncio.start_server(on_connect, HOST, port, limit=1 << 16)
    bound = listener.sockets[0].getsockname()[1]
    print(f"THREADLINE_TCP_PORT={bound}", flush=True)
    log.warning("listening on %s:%d (token in %s)", HOST, bound, settings.home / "tcp-token")
    async with listener:
        await listener.serve_forever()
    return 0


def serve_tcp(settings: Settings, port: int) -> int:
    try:
        return asyncio.run(_main(settings, port))
    except KeyboardInterrupt:
        return 0
    finally:
        sys.stdout.flush()
