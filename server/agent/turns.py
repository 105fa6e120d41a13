"""A session's turns: at most one running (``TurnAlreadyRunning``); sessions run theirs independently.

A turn runs as its own task, so cancelling it (``cancelTurn`` or ``$/cancelRequest`` on ``submitTurn``) cancels
the provider stream or the running command wherever it is, and ``submitTurn`` still resolves normally with
``stopReason: "cancelled"``. A turn is registered before it is built (the frozen context, the provider), so
``deleteSession`` in that window finds it and cancels it: the model is never called for a deleted session.

``submitTurn {queue: true}`` registers a turn that waits for the one ahead of it (running or itself queued) and
then runs; ``steerTurn`` leaves text for the running turn, which takes it before its next model call.

An ``exclusive`` operation (``compactSession``, ``rewindFiles``, ``/compact``: declared in the method table,
``server.methods.registry``) has the session to itself: it is refused while a turn runs or waits, a turn submitted
meanwhile is refused, and a queued one waits for it to end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from protocol.messages import SubmitTurnResult
from server.errors import SessionNotFound, TurnAlreadyRunning, TurnNotRunning


@dataclass
class _Running:
    task: asyncio.Task[SubmitTurnResult]
    turn_id: str
    steers: list[str] = field(default_factory=list)
    closed: bool = False  # the turn has taken its last steer: it is ending, steerTurn answers TurnNotRunning


class SessionTurns:
    """One session's running turn and the turns queued behind it (held by its ``server.sessions.Session``)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._running: _Running | None = None
        self._tasks: list[asyncio.Task[SubmitTurnResult]] = []  # running and queued, in order
        self.deleted = False  # a turn may not start any more, whatever it read before the delete
        # The result of a turn cancelled before its task took its first step (its body, and so its own
        # ``except CancelledError``, never ran): a deleteSession handled right after the submitTurn.
        self._unstarted: WeakKeyDictionary[asyncio.Task[Any], Callable[[], SubmitTurnResult]] = WeakKeyDictionary()
        self._exclusive: str | None = None  # the operation that has the session to itself now
        self._after_exclusive: asyncio.Event | None = None  # set when it ends (queued turns wait for it)

    def is_running(self) -> bool:
        return bool(self._tasks)

    def ensure_idle(self) -> None:
        if self.deleted:
            raise SessionNotFound(f"no session {self.session_id!r}")
        if self.is_running():
            raise TurnAlreadyRunning(f"a turn is already running in session {self.session_id}")
        if self._exclusive is not None:
            raise TurnAlreadyRunning(f"session {self.session_id} is busy: {self._exclusive} is running")

    @contextmanager
    def exclusive(self, operation: str) -> Iterator[None]:
        """Have the session to itself while the block runs: refused (``TurnAlreadyRunning``) if a turn runs or
        waits, or another such operation runs; no turn starts until the block ends."""
        self.ensure_idle()
        self._exclusive, self._after_exclusive = operation, asyncio.Event()
        try:
            yield
        finally:
            self._after_exclusive.set()
            self._exclusive = self._after_exclusive = None

    def start(
        self,
        turn_id: str,
        run: Callable[[], Coroutine[Any, Any, SubmitTurnResult]],
        *,
        queue: bool = False,
        cancelled: Callable[[], SubmitTurnResult] | None = None,
    ) -> asyncio.Task[Any]:
        """Run ``run()`` as the session's turn; with ``queue``, after the turns already there (``cancelled()`` is
        the result of one cancelled while it waits)."""
        if not queue:
            self.ensure_idle()
        elif self.deleted:
            raise SessionNotFound(f"no session {self.session_id!r}")
        ahead = self._tasks[-1] if self._tasks else None
        exclusive = self._after_exclusive  # queued behind an exclusive operation (nothing else is ahead then)

        async def in_order() -> SubmitTurnResult:
            if ahead is not None or exclusive is not None:
                try:
                    if ahead is not None:
                        await asyncio.wait([ahead])
                    if exclusive is not None:
                        await exclusive.wait()
                except asyncio.CancelledError:
                    if cancelled is None:
                        raise
                    return cancelled()
                if ahead is not None:
                    self._running = _Running(task, turn_id)  # now the running one (first: set at start)
            return await run()

        task = asyncio.create_task(in_order(), name=f"turn {self.session_id}")
        self._tasks.append(task)
        if ahead is None:
            self._running = _Running(task, turn_id)
        task.add_done_callback(self._ended)
        if cancelled is not None:
            self._unstarted[task] = cancelled
        return task

    def _ended(self, task: asyncio.Task[Any]) -> None:
        if task in self._tasks:
            self._tasks.remove(task)
        if self._running is not None and self._running.task is task:
            self._running = None

    async def wait(self, task: asyncio.Task[SubmitTurnResult]) -> SubmitTurnResult:
        """Await a turn; if the awaiting request is itself cancelled, cancel the turn and return its result."""
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            try:
                return await task
            except asyncio.CancelledError:
                if (unstarted := self._unstarted.get(task)) is None:
                    raise
                return unstarted()

    def steer(self, text: str) -> str:
        """Leave ``text`` for the running turn's next model call; returns that turn's id."""
        running = self._running
        if running is None or running.closed or running.task.done():
            raise TurnNotRunning(f"no turn is running in session {self.session_id}")
        running.steers.append(text)
        return running.turn_id

    def take_steers(self, last: bool = False) -> list[str]:
        """What was steered into the running turn since the last call (the turn's own call). With ``last``, a
        turn that finds nothing is closed to steering in the same step: it is ending, and what it still awaits
        before its task is done (storing, announcing) must not accept text it will never send."""
        running = self._running
        if running is None:
            return []
        texts, running.steers = running.steers, []
        if last and not texts:
            running.closed = True
        return texts

    def cancel(self) -> bool:
        """Cancel the running turn; turns queued after it still run."""
        running = self._running
        if running is None or running.task.done():
            return False
        running.task.cancel()
        return True

    def cancel_with_queued(self) -> bool:
        """Cancel the running turn and the turns queued behind it (ACP's ``session/cancel``: every open prompt of
        the session answers ``cancelled``), the queued ones first so none starts as the one ahead ends."""
        tasks = [t for t in self._tasks if not t.done()]
        for task in reversed(tasks):
            task.cancel()
        return bool(tasks)

    async def stop_for_delete(self) -> None:
        """Mark the session deleted (no turn starts in it from now on), then cancel its turns and wait for them."""
        self.deleted = True
        while tasks := list(self._tasks):
            for task in reversed(tasks):  # the queued ones first, so none starts when the one ahead ends
                task.cancel()
            await asyncio.wait(tasks)

    def undelete(self) -> None:
        """The delete failed (storage): the session is still there, and turns may start in it again."""
        self.deleted = False

    async def cancel_all(self) -> None:
        tasks = list(self._tasks)
        for task in reversed(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
