"""``threadline daemon``: one server per user and ``$THREADLINE_HOME``, on a unix socket, whose sessions outlive
their clients (B-DAEMON-1, docs/DAEMON.md).

``$THREADLINE_HOME/daemon/`` (mode 0700) holds the socket (0600) and a lock file: the daemon that holds the lock
(``flock``) is the only one on that home, so a second one started at the same moment leaves at once, and a
socket file found by the lock's holder is a dead daemon's and is replaced. A peer whose uid is not ours is refused
(``SO_PEERCRED``) even if the folder's permissions were loosened. Each connection is its own JSON-RPC peer (LSP
framing) over the one runtime; the hub (``server.edge.hub``) routes updates and approvals to the attached ones. With
no connection, no turn running and no background process alive for ``[daemon] idle_exit_seconds``, it leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import socket
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.config import Settings
from server.errors import StorageFailure
from server.private_files import private_folder as make_private

log = logging.getLogger(__name__)

MAX_BUFFERED = 64 * 1024 * 1024  # bytes written to a client and not yet read: past this it is cut off
_UNIX_PATH_MAX = 100  # sun_path is 108 bytes on Linux; longer paths go through /proc/self/fd


@dataclass(frozen=True)
class DaemonPaths:
    folder: Path
    socket: Path
    lock: Path

    @classmethod
    def of(cls, home: Path) -> DaemonPaths:
        folder = home / "daemon"
        return cls(folder, folder / "threadline.sock", folder / "lock")


def private_folder(paths: DaemonPaths) -> None:
    """The daemon's folder, ours alone (0700): nobody else can reach the socket inside."""
    try:
        make_private(paths.folder)
        if paths.folder.stat().st_uid != os.getuid():
            raise StorageFailure(f"{paths.folder} belongs to another user")
        os.chmod(paths.folder, 0o700)
    except OSError as exc:
        raise StorageFailure(f"cannot prepare {paths.folder}: {exc}") from exc


@contextlib.contextmanager
def socket_address(path: Path) -> Any:
    """An address ``bind``/``connect`` accept for ``path``: a long path (a deep ``$THREADLINE_HOME``) is reached
    through its folder's descriptor, since ``sun_path`` holds only 108 bytes."""
    if len(os.fsencode(path)) < _UNIX_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def peer_uid(sock: socket.socket) -> int:
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return int(uid)


def take_lock(paths: DaemonPaths) -> int | None:
    """The lock's descriptor, holding it (our pid written in it), or None when another daemon holds it."""
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


class Daemon:
    def __init__(self, settings: Settings) -> None:
        from server.edge.app import shared_runtime

        self.settings = settings
        self.paths = DaemonPaths.of(settings.home)
        self.shared = shared_runtime(settings)
        self.live: set[Any] = set()  # the connections being served
        self.stop: asyncio.Future[int] | None = None

    async def run(self) -> int:
        private_folder(self.paths)
        lock = take_lock(self.paths)
        if lock is None:
            log.warning("a daemon already runs on %s", self.settings.home)
            return 0
        try:
            return await self._serve()
        finally:
            os.close(lock)  # the lock goes last: until then no other daemon takes this home

    async def _serve(self) -> int:
        loop = asyncio.get_running_loop()
        self.stop = loop.create_future()
        with contextlib.suppress(FileNotFoundError):
            self.paths.socket.unlink()  # a killed daemon's: we hold the lock, so nobody listens on it
        await self.shared.runtime.open()
        old_umask = os.umask(0o077)  # the socket is born 0600
        try:
            with socket_address(self.paths.socket) as address:
                listener = await asyncio.start_unix_server(self._on_connect, path=address, limit=1 << 16)
        finally:
            os.umask(old_umask)
        os.chmod(self.paths.socket, 0o600)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            loop.add_signal_handler(signum, self._end, 128 + signum)
        watcher = loop.create_task(self._watch_idle())
        log.warning("listening on %s (pid %d)", self.paths.socket, os.getpid())
        try:
            code = await self.stop
        finally:
            watcher.cancel()
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                self.paths.socket.unlink()
            for server in list(self.live):
                server.request_exit(0)
            while self.live:  # each connection ends (EOF, exit) before the runtime closes under it
                await asyncio.sleep(0.05)
            await self.shared.runtime.close()
        return code

    def _end(self, code: int) -> None:
        if self.stop is not None and not self.stop.done():
            self.stop.set_result(code)

    def _busy(self) -> bool:
        sessions = self.shared.runtime.sessions.live()
        running = any(s.turns.is_running() for s in sessions)
        # a background process the model started runs on while the daemon lives: leaving would kill it
        return bool(self.live) or running or any(s.processes for s in sessions)

    async def _watch_idle(self) -> None:
        """Leave after ``idle_exit_seconds`` with no connection, no turn running and no background process alive;
        never while a turn runs or a background process lives."""
        limit = self.settings.daemon_idle_exit_seconds
        idle_since = time.monotonic()
        while True:
            await asyncio.sleep(min(1.0, limit / 4))
            if self._busy():
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= limit:
                log.warning("idle for %.0f s with no client and no turn: leaving", limit)
                self._end(0)
                return

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from server.edge.app import ThreadlineServer

        sock = writer.get_extra_info("socket")
        try:
            uid = peer_uid(sock)
        except OSError:
            uid = -1
        if uid != os.getuid():
            log.warning("refused a connection from uid %d (this daemon serves uid %d only)", uid, os.getuid())
            await _close(writer)
            return
        if self.stop is None or self.stop.done():
            await _close(writer)
            return
        server = ThreadlineServer(self.settings, self.shared)
        self.live.add(server)

        def write(data: bytes) -> None:
            if writer.is_closing():
                return
            writer.write(data)
            if writer.transport.get_write_buffer_size() > MAX_BUFFERED:
                log.warning("a client read nothing of %d bytes: cut off (it may attach again)", MAX_BUFFERED)
                writer.transport.abort()

        try:
            await server.serve(reader, write)
        except Exception:
            log.exception("a connection failed")
        finally:
            self.live.discard(server)
            await _close(writer)


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


def run_daemon(settings: Settings) -> int:
    return asyncio.run(Daemon(settings).run())
