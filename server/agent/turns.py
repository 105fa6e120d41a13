"""Running turns: at most one per session (``TurnAlreadyRunning``), any number across sessions.

A turn runs as its own task, so cancelling it (``cancelTurn`` or ``$/cancelRequest`` on ``submitTurn``) cancels
the provider stream or the running command wherever it is, and ``submitTurn`` still resolves normally with
``stopReason: "cancelled"``. A turn is registered before it is built (the frozen context, the provider), so
``deleteSession`` in that window finds it and cancels it: the model is never called for a deleted session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from protocol.messages import SubmitTurnResult
from server.errors import SessionNotFound, TurnAlreadyRunning


class TurnManager:
    def __init__(self) -> None:
        self._running: dict[str, asyncio.Task[SubmitTurnResult]] = {}
        self._deleted: set[str] = set()  # a turn may not start in these, whatever it read before the delete

    def is_running(self, session_id: str) -> bool:
        return session_id in self._running

    def ensure_idle(self, session_id: str) -> None:
        if session_id in self._deleted:
            raise SessionNotFound(f"no session {session_id!r}")
        if session_id in self._running:
            raise TurnAlreadyRunning(f"a turn is already running in session {session_id}")

    def start(self, session_id: str, run: Callable[[], Coroutine[Any, Any, SubmitTurnResult]]) -> asyncio.Task:
        self.ensure_idle(session_id)
        task = asyncio.create_task(run(), name=f"turn {session_id}")
        self._running[session_id] = task
        task.add_done_callback(lambda _t: self._running.pop(session_id, None))
        return task

    async def wait(self, task: asyncio.Task[SubmitTurnResult]) -> SubmitTurnResult:
        """Await a turn; if the awaiting request is itself cancelled, cancel the turn and return its result."""
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            return await task

    def cancel(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def stop_for_delete(self, session_id: str) -> None:
        """Mark the session deleted (no turn starts in it from now on), then cancel its turn and wait for it."""
        self._deleted.add(session_id)
        while (task := self._running.get(session_id)) is not None:
            task.cancel()
            await asyncio.wait([task])

    def undelete(self, session_id: str) -> None:
        """The delete failed (storage): the session is still there, and turns may start in it again."""
        self._deleted.discard(session_id)

    async def cancel_all(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
