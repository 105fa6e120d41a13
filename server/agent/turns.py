"""Running turns: at most one per session (``TurnAlreadyRunning``), any number across sessions.

A turn runs as its own task, so cancelling it (``cancelTurn`` or ``$/cancelRequest`` on ``submitTurn``) cancels
the provider stream or the running command wherever it is, and ``submitTurn`` still resolves normally with
``stopReason: "cancelled"``. A turn is registered before it is built (the frozen context, the provider), so
``deleteSession`` in that window finds it and cancels it: the model is never called for a deleted session.

``submitTurn {queue: true}`` registers a turn that waits for the one ahead of it (running or itself queued) and
then runs; ``steerTurn`` leaves text for the running turn, which takes it before its next model call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
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


class TurnManager:
    def __init__(self) -> None:
        self._running: dict[str, _Running] = {}
        self._tasks: dict[str, list[asyncio.Task[SubmitTurnResult]]] = {}  # running and queued, in order
        self._deleted: set[str] = set()  # a turn may not start in these, whatever it read before the delete
        # The result of a turn cancelled before its task took its first step (its body, and so its own
        # ``except CancelledError``, never ran): a deleteSession handled right after the submitTurn.
        self._unstarted: WeakKeyDictionary[asyncio.Task, Callable[[], SubmitTurnResult]] = WeakKeyDictionary()

    def is_running(self, session_id: str) -> bool:
        return bool(self._tasks.get(session_id))

    def ensure_idle(self, session_id: str) -> None:
        if session_id in self._deleted:
            raise SessionNotFound(f"no session {session_id!r}")
        if self.is_running(session_id):
            raise TurnAlreadyRunning(f"a turn is already running in session {session_id}")

    def start(
        self,
        session_id: str,
        turn_id: str,
        run: Callable[[], Coroutine[Any, Any, SubmitTurnResult]],
        *,
        queue: bool = False,
        cancelled: Callable[[], SubmitTurnResult] | None = None,
    ) -> asyncio.Task:
        """Run ``run()`` as the session's turn; with ``queue``, after the turns already there (``cancelled()`` is
        the result of one cancelled while it waits)."""
        if not queue:
            self.ensure_idle(session_id)
        elif session_id in self._deleted:
            raise SessionNotFound(f"no session {session_id!r}")
        tasks = self._tasks.setdefault(session_id, [])
        ahead = tasks[-1] if tasks else None

        async def in_order() -> SubmitTurnResult:
            if ahead is not None:
                try:
                    await asyncio.wait([ahead])
                except asyncio.CancelledError:
                    if cancelled is None:
                        raise
                    return cancelled()
                self._running[session_id] = _Running(task, turn_id)  # now the running one (first: set at start)
            return await run()

        task = asyncio.create_task(in_order(), name=f"turn {session_id}")
        tasks.append(task)
        if ahead is None:
            self._running[session_id] = _Running(task, turn_id)
        task.add_done_callback(lambda t: self._ended(session_id, t))
        if cancelled is not None:
            self._unstarted[task] = cancelled
        return task

    def _ended(self, session_id: str, task: asyncio.Task) -> None:
        tasks = self._tasks.get(session_id, [])
        if task in tasks:
            tasks.remove(task)
        if not tasks:
            self._tasks.pop(session_id, None)
        running = self._running.get(session_id)
        if running is not None and running.task is task:
            del self._running[session_id]

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

    def steer(self, session_id: str, text: str) -> str:
        """Leave ``text`` for the running turn's next model call; returns that turn's id."""
        running = self._running.get(session_id)
        if running is None or running.closed or running.task.done():
            raise TurnNotRunning(f"no turn is running in session {session_id}")
        running.steers.append(text)
        return running.turn_id

    def take_steers(self, session_id: str, last: bool = False) -> list[str]:
        """What was steered into the session's running turn since the last call (the turn's own call). With
        ``last``, a turn that finds nothing is closed to steering in the same step: it is ending, and what it
        still awaits before its task is done (storing, announcing) must not accept text it will never send."""
        running = self._running.get(session_id)
        if running is None:
            return []
        texts, running.steers = running.steers, []
        if last and not texts:
            running.closed = True
        return texts

    def cancel(self, session_id: str) -> bool:
        """Cancel the running turn; turns queued after it still run."""
        running = self._running.get(session_id)
        if running is None or running.task.done():
            return False
        running.task.cancel()
        return True

    async def stop_for_delete(self, session_id: str) -> None:
        """Mark the session deleted (no turn starts in it from now on), then cancel its turns and wait for them."""
        self._deleted.add(session_id)
        while tasks := list(self._tasks.get(session_id, [])):
            for task in reversed(tasks):  # the queued ones first, so none starts when the one ahead ends
                task.cancel()
            await asyncio.wait(tasks)

    def undelete(self, session_id: str) -> None:
        """The delete failed (storage): the session is still there, and turns may start in it again."""
        self._deleted.discard(session_id)

    async def cancel_all(self) -> None:
        tasks = [t for ts in self._tasks.values() for t in ts]
        for task in reversed(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
