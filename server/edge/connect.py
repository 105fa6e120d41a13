"""``threadline connect``: stdio <-> the daemon's socket, byte for byte (B-DAEMON-1, docs/DAEMON.md).

An editor (or ``threadline chat --attach``) spawns it where it would spawn ``threadline serve``; the JSON-RPC it
speaks is unchanged. When no daemon answers on ``$THREADLINE_HOME``, it starts one (detached, in its own session,
logging to ``$THREADLINE_HOME/logs/daemon.log``) and connects once it listens. Several bridges starting at once
each may start one: the daemon's lock lets one win, the others leave, and every bridge connects to the winner.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from server.edge.daemon import DaemonPaths, socket_address
from server.private_files import open_private
from server.security.key_handover import FD_VAR

START_TIMEOUT = 60.0  # seconds a bridge waits for a daemon to listen (a busy machine, a big store to open)
_CHUNK = 1 << 16


def connect_socket(home: Path, start: bool = True, timeout: float = START_TIMEOUT) -> socket.socket:
    """A connection to the daemon of ``home``, starting one when none listens (``start``)."""
    paths = DaemonPaths.of(home)
    deadline = time.monotonic() + timeout
    started: subprocess.Popen[bytes] | None = None
    delay = 0.01
    while True:
        sock = _try_connect(paths.socket)
        if sock is not None:
            return sock
        if not start:
            raise ConnectionError(f"no Threadline daemon listens on {paths.socket}")
        if started is None:
            _check_config(home)  # a daemon that cannot read its settings is said at once, not restarted
        elif started.poll() not in (None, 0):  # it failed (0: it lost the lock to another daemon on this home)
            raise DaemonFailed(f"the Threadline daemon could not start: {_last_said(home)}")
        if started is None or started.poll() is not None:
            # none yet, or ours lost the lock to one that is still starting, or stopping: try again
            started = _start_daemon(home)
        if time.monotonic() > deadline:
            raise ConnectionError(f"the Threadline daemon did not start (see {home / 'logs' / 'daemon.log'})")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


class DaemonFailed(ConnectionError):
    """The daemon cannot start here (its configuration, its store): starting it again would not help."""


def _check_config(home: Path) -> None:
    from server.config import load_settings
    from server.config_file import ConfigError

    try:
        load_settings({**os.environ, "THREADLINE_HOME": str(home)})
    except ConfigError as exc:
        raise DaemonFailed(str(exc)) from None


def _last_said(home: Path) -> str:
    """The last line the failed daemon wrote to its log (its reason, as ``serve`` says it on stderr)."""
    try:
        with open(home / "logs" / "daemon.log", "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
            lines = log.read().decode(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    said = lines[-1].removeprefix("threadline: ") if lines else ""
    return said or f"see {home / 'logs' / 'daemon.log'}"


def _try_connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with socket_address(path) as address:
            sock.connect(address)
    except OSError:  # absent, refused (a dead daemon's socket), or a folder we cannot open yet
        sock.close()
        return None
    return sock


def _start_daemon(home: Path) -> subprocess.Popen[bytes]:
    """``threadline daemon`` in its own session, so closing the terminal or editor that started it leaves it
    running; provider keys handed to this bridge over a pipe are handed on to it."""
    log_fd = open_private(home / "logs" / "daemon.log", os.O_WRONLY | os.O_APPEND)  # 0600, in folders made 0700
    keys_fd = os.environ.get(FD_VAR)
    pass_fds: tuple[int, ...] = ()
    if keys_fd and keys_fd.isdigit():
        with contextlib.suppress(OSError):
            os.fstat(int(keys_fd))
            pass_fds = (int(keys_fd),)
    env = {**os.environ, "THREADLINE_HOME": str(home)}
    with os.fdopen(log_fd, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "server", "daemon"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
            pass_fds=pass_fds,
            env=env,
            cwd=home,
        )


def bridge(sock: socket.socket, stdin_fd: int = 0, stdout_fd: int = 1) -> int:
    """Relay until the daemon closes the connection; the client's EOF is passed on as a half-close, so the
    daemon answers what it already has and ends the connection (detaching, never cancelling)."""

    def upstream() -> None:
        try:
            while chunk := os.read(stdin_fd, _CHUNK):
                sock.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, name="stdin", daemon=True).start()
    try:
        while chunk := sock.recv(_CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(stdout_fd, view) :]
    except OSError:  # the client went away (a closed stdout): the daemon sees our EOF and detaches it
        pass
    finally:
        sock.close()
    return 0


def run_connect(home: Path, start: bool = True) -> int:
    try:
        sock = connect_socket(home, start)
    except DaemonFailed as exc:
        print(f"threadline connect: {exc}", file=sys.stderr)
        return 2
    except ConnectionError as exc:
        print(f"threadline connect: {exc}", file=sys.stderr)
        return 1
    return bridge(sock)
