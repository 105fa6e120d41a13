"""The server's side of ``server.patterns.forkserver``: one warm fork server per process, a worker per job.

``FORK_SERVER.get()`` starts it on first use (and again if it died); ``None`` when it cannot be had, and the
caller then spawns a worker as before. A job gets two fresh pipes: the job goes in through one, the answer
comes back through the other, read on the event loop as a spawned worker's stdout is. At the deadline, or when
the caller is cancelled, the fork server is told to kill that worker (only it can do so safely: it is the parent,
so the pid is never reused before it reaps it).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
from typing import Any

from server.patterns.answer import PACKAGE_ROOT, ScanError, ScanResult, collect_until, worker_env
from server.sandbox.start import start_blocking

log = logging.getLogger(__name__)
_SMALL_JOB = 32 * 1024  # written at once (a pipe holds 64 KB); a larger job is written from a thread


class ForkServer:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = start_blocking(  # unconfined (our own code); exec's Ctrl-C is not its to get
                [sys.executable, "-m", "server.patterns.forkserver", str(os.getpid()), str(theirs.fileno())],
                confine=None,
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=worker_env(),
                cwd=str(PACKAGE_ROOT),
                new_session=True,
            )
        finally:
            theirs.close()
        ours.setblocking(False)  # a stuck fork server must never block the event loop
        self._control = ours
        self._jobs = itertools.count(1)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _send(self, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
        socket.send_fds(self._control, [json.dumps(message).encode()], list(fds))

    async def scan(self, job: dict[str, Any], timeout: float) -> ScanResult:
        number = next(self._jobs)
        job_r, job_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            self._send({"job": number}, (job_r, out_w))
        except OSError as exc:
            for fd in (job_r, job_w, out_r, out_w):
                os.close(fd)
            raise ScanError(f"the pattern worker could not be started: {exc}") from None
        os.close(job_r)
        os.close(out_w)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20, loop=loop)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(out_r, "rb", buffering=0)
        )
        result = ScanResult()
        try:
            data = json.dumps(job).encode()
            if len(data) <= _SMALL_JOB:
                _write_all(job_w, data)
            else:
                await asyncio.to_thread(_write_all, job_w, data)
            await collect_until(reader, result, timeout)
        finally:
            if not result.done:
                with contextlib.suppress(OSError):  # the fork server is gone, and its workers with it
                    self._send({"kill": number})
            transport.close()
        if not result.timed_out and not result.done:
            raise ScanError("the pattern worker stopped without an answer")
        return result

    def close(self) -> None:
        self._control.close()  # end of file: the fork server kills its workers and exits


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        pass  # the worker is gone; its answer (or its absence) says why
    finally:
        os.close(fd)


class ForkServerHandle:
    def __init__(self) -> None:
        self._server: ForkServer | None = None
        self._failed = False

    def get(self) -> ForkServer | None:
        if self._server is not None and self._server.alive:
            return self._server
        if self._server is not None:
            self._server.close()
        if self._failed:
            return None
        try:
            self._server = ForkServer()
        except OSError as exc:
            log.warning("cannot start the pattern fork server (%s); spawning a worker per job", exc)
            self._failed, self._server = True, None
        return self._server


FORK_SERVER = ForkServerHandle()
