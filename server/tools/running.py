"""A session's background processes: the ``processes`` slot of its ``Session`` handle (``server.sessions``).

A background process is its process group, not its launching shell (docs/DESIGN.md, under B-PROC-1; tested as
B-WEB-2): every command starts in a session of its own, so its group id is the launcher's pid and
everything the command starts (``(job) & echo started``) stays in that group after the shell has returned. So a
process is *running* while anything in its group lives (``killpg(pgid, 0)``), whatever became of the shell; the
per-session cap counts those; stopping one TERMs the whole group, waits up to a grace period for the group to
empty, then KILLs it. Once a group is seen empty that is final: its id is never probed again (a later, unrelated
group could reuse the number). A process that left the group (``setsid job &``) but still holds the output pipe
keeps the background process running too (its output has not ended), and a stop finds it by that pipe in
``/proc`` and signals it with the group. Deleting the session stops them all (``Sessions.delete``); a daemon with a live
background process is not idle (``server.edge.daemon``).

Output is gathered as it comes (so a chatty process never blocks on a full pipe) and held until read, bounded
twice: ``KEEP_UNREAD_BYTES`` per process and ``TOTAL_UNREAD_BYTES`` over every process of this server; past
either the oldest unread bytes are dropped (from the process holding most, for the total) and the next read says
how many. A session keeps its last ``KEPT_ENDED`` ended processes for ``process_output``; older ones are forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

KEEP_UNREAD_BYTES = 1024 * 1024  # what one process keeps between two reads
TOTAL_UNREAD_BYTES = 16 * 1024 * 1024  # what all the processes of this server keep between reads
KEPT_ENDED = 32  # ended processes a session remembers (their exit code, their last output)
STOP_GRACE_SECONDS = 5.0
_POLL_SECONDS = 0.05
Status = Literal["running", "exited", "stopped"]


class _Unread:
    """The unread output of every background process of this server, and its total."""

    def __init__(self) -> None:
        self.held: set[BackgroundProcess] = set()
        self.total = 0

    def add(self, process: BackgroundProcess, chunk: bytes) -> None:
        process.unread += chunk
        self.total += len(chunk)
        self.held.add(process)
        process.trim(len(process.unread) - KEEP_UNREAD_BYTES)
        while self.total > TOTAL_UNREAD_BYTES and self.held:
            fullest = max(self.held, key=lambda p: len(p.unread))
            fullest.trim(min(len(fullest.unread), self.total - TOTAL_UNREAD_BYTES))

    def taken(self, process: BackgroundProcess, size: int) -> None:
        self.total -= size
        if not process.unread:
            self.held.discard(process)


UNREAD = _Unread()


@dataclass(eq=False)
class BackgroundProcess:
    id: str
    pid: int  # the launcher's pid, which is also the group's id (it started a session of its own)
    command: str
    started_at: str
    proc: asyncio.subprocess.Process
    unread: bytearray = field(default_factory=bytearray)
    dropped: int = 0  # unread bytes dropped past the bounds
    stopped: bool = False
    reader: asyncio.Task[None] | None = None
    pipe: str | None = None  # ``pipe:[inode]`` of its output pipe, as /proc shows it in a holder's fd table
    _group_gone: bool = False

    @property
    def pgid(self) -> int:
        return self.pid

    def alive(self) -> bool:
        """Whether anything of the process lives: its launcher, any process in its group, or one that still holds
        its output pipe (the output has not ended)."""
        if self.proc.returncode is None:
            return True
        if self.reader is not None and not self.reader.done():
            return True
        if self._group_gone:
            return False
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            self._group_gone = True
            return False
        except PermissionError:  # a member we may not signal (it changed its credentials): still there
            return True
        return True

    @property
    def exit_code(self) -> int | None:
        """The launching shell's exit code, once the whole group has ended."""
        return None if self.alive() else self.proc.returncode

    @property
    def status(self) -> Status:
        if self.alive():
            return "running"
        return "stopped" if self.stopped else "exited"

    def trim(self, excess: int) -> None:
        """Drop the ``excess`` oldest unread bytes (counted, and said at the next read)."""
        if excess > 0:
            del self.unread[:excess]
            self.dropped += excess
            UNREAD.taken(self, excess)

    def take_output(self) -> str:
        data, dropped = bytes(self.unread), self.dropped
        self.unread.clear()
        self.dropped = 0
        UNREAD.taken(self, len(data))
        text = data.decode("utf-8", errors="replace")
        note = f"[{dropped} earlier bytes dropped: more than {KEEP_UNREAD_BYTES} bytes waited unread]\n"
        return note + text if dropped else text

    def forget_output(self) -> None:
        size = len(self.unread)
        self.unread.clear()
        UNREAD.taken(self, size)


class BackgroundProcesses:
    """A session's background processes (the ``processes`` slot of its ``Session`` handle)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._procs: dict[str, BackgroundProcess] = {}

    def __bool__(self) -> bool:
        return any(p.alive() for p in self._procs.values())

    def all(self) -> list[BackgroundProcess]:
        return list(self._procs.values())

    def running(self) -> int:
        return sum(1 for p in self._procs.values() if p.alive())

    def get(self, process_id: str) -> BackgroundProcess | None:
        return self._procs.get(process_id)

    def add(self, process: BackgroundProcess) -> None:
        self._forget_oldest_ended()
        process.pipe = _pipe_name(process.proc)
        self._procs[process.id] = process
        process.reader = asyncio.get_running_loop().create_task(_gather_output(process))

    async def stop(self, process_id: str, grace: float = STOP_GRACE_SECONDS) -> BackgroundProcess | None:
        """TERM the process's group, then KILL it if anything of it is left after ``grace`` seconds; None for an
        unknown id."""
        process = self._procs.get(process_id)
        if process is None:
            return None
        if process.alive():
            process.stopped = True
            await _signal_all(process, signal.SIGTERM)
            await _until_gone(process, grace)
            await _signal_all(process, signal.SIGKILL)
            await process.proc.wait()
            await _until_gone(process, 10.0)  # killed: only the reaping of its members is left
        if process.reader is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(process.reader), 2.0)
        return process

    async def stop_all(self) -> None:
        """Stop every process (the session is going) and let go of what they printed."""
        await asyncio.gather(*(self.stop(pid, grace=1.0) for pid in list(self._procs)))
        for process in self._procs.values():
            process.forget_output()

    def _forget_oldest_ended(self) -> None:
        ended = [key for key, p in self._procs.items() if not p.alive()]
        for key in ended[: max(0, len(ended) - KEPT_ENDED + 1)]:
            self._procs.pop(key).forget_output()


async def _gather_output(process: BackgroundProcess) -> None:
    stream = process.proc.stdout
    assert stream is not None
    while chunk := await stream.read(1 << 16):
        UNREAD.add(process, chunk)
    await process.proc.wait()


async def _until_gone(process: BackgroundProcess, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while process.alive():
                await asyncio.sleep(_POLL_SECONDS)


async def _signal_all(process: BackgroundProcess, sig: int) -> None:
    """``sig`` to the process's group, and to whatever outside it still holds its output pipe."""
    _signal_group(process.pgid, sig)
    if process.pipe is None or process.reader is None or process.reader.done():
        return
    for pid in await asyncio.to_thread(_holding, process.pipe):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _pipe_name(proc: asyncio.subprocess.Process) -> str | None:
    """How /proc names the write end of ``proc``'s output pipe (the same inode as our read end), or None."""
    transport = getattr(proc, "_transport", None)  # asyncio keeps the pipes there; no public way reaches them
    try:
        pipe = transport.get_pipe_transport(1).get_extra_info("pipe")  # type: ignore[union-attr]
        return f"pipe:[{os.fstat(pipe.fileno()).st_ino}]"
    except (AttributeError, OSError, ValueError):
        return None


def _holding(pipe: str, proc: Path = Path("/proc")) -> list[int]:
    """The processes (other than this one) with ``pipe`` open, as far as this user may see their descriptors."""
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if any(_link(fd) == pipe for fd in (entry / "fd").iterdir()):
                found.append(int(entry.name))
    return found


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""
