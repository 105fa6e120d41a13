"""A session's background processes: the ``processes`` slot of its ``Session`` handle (``server.sessions``).

Each one's output is gathered as it comes and held until read (the latest ``KEEP_UNREAD_BYTES``); stopping one
TERMs its process group, then KILLs it after a grace period, so what its shell started ends too. Deleting the
session stops them all (``Sessions.delete``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass, field
from typing import Literal

KEEP_UNREAD_BYTES = 16 * 1024 * 1024  # what is kept between two reads; older output is dropped and counted
STOP_GRACE_SECONDS = 5.0
Status = Literal["running", "exited", "stopped"]


@dataclass
class BackgroundProcess:
    id: str
    pid: int
    command: str
    started_at: str
    proc: asyncio.subprocess.Process
    unread: bytearray = field(default_factory=bytearray)
    dropped: int = 0  # unread bytes dropped past KEEP_UNREAD_BYTES
    stopped: bool = False
    reader: asyncio.Task[None] | None = None

    @property
    def exit_code(self) -> int | None:
        return self.proc.returncode

    @property
    def status(self) -> Status:
        if self.proc.returncode is None:
            return "running"
        return "stopped" if self.stopped else "exited"

    def take_output(self) -> str:
        data, dropped = bytes(self.unread), self.dropped
        self.unread.clear()
        self.dropped = 0
        text = data.decode("utf-8", errors="replace")
        return f"[{dropped} earlier bytes dropped]\n{text}" if dropped else text


class BackgroundProcesses:
    """A session's background processes (the ``processes`` slot of its ``Session`` handle)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._procs: dict[str, BackgroundProcess] = {}

    def __bool__(self) -> bool:
        return any(p.status == "running" for p in self._procs.values())

    def all(self) -> list[BackgroundProcess]:
        return list(self._procs.values())

    def running(self) -> int:
        return sum(1 for p in self._procs.values() if p.status == "running")

    def get(self, process_id: str) -> BackgroundProcess | None:
        return self._procs.get(process_id)

    def add(self, process: BackgroundProcess) -> None:
        self._procs[process.id] = process
        process.reader = asyncio.get_running_loop().create_task(_gather_output(process))

    async def stop(self, process_id: str, grace: float = STOP_GRACE_SECONDS) -> BackgroundProcess | None:
        """TERM the process's group, then KILL it after ``grace`` seconds; None for an unknown id."""
        process = self._procs.get(process_id)
        if process is None:
            return None
        if process.status == "running":
            process.stopped = True
            _signal_group(process.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(process.proc.wait()), grace)
            _signal_group(process.pid, signal.SIGKILL)  # what the shell started may have outlived it
            await process.proc.wait()
        if process.reader is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(process.reader), 2.0)
        return process

    async def stop_all(self) -> None:
        await asyncio.gather(*(self.stop(pid, grace=1.0) for pid in list(self._procs)))


async def _gather_output(process: BackgroundProcess) -> None:
    stream = process.proc.stdout
    assert stream is not None
    while chunk := await stream.read(1 << 16):
        process.unread += chunk
        excess = len(process.unread) - KEEP_UNREAD_BYTES
        if excess > 0:
            del process.unread[:excess]
            process.dropped += excess
    await process.proc.wait()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
