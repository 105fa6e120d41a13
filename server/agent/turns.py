"""Running turns: at most one per session (``TurnAlreadyRunning``), any number across sessions.

A turn runs as its own task, so cancelling it (``cancelTurn`` or ``$/cancelRequest`` on ``submitTurn``) cancels
the provider stream or the running command wherever it is, and ``submitTurn`` still resolves normally with
``stopReason: "cancelled"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from protocol.messages import SubmitTurnResult
from server.rpc import RequestError


class TurnManager:
    def __init__(self) -> None:
        self._running: dict[str, asyncio.Task[SubmitTurnResult]] = {}

    def is_running(self, session_id: str) -> bool:
        return session_id in self._running

    def ensure_idle(self, session_id: str) -> None:
        if session_id in self._running:
            raise RequestError("TurnAlreadyRunning", f"a turn is already running in session {session_id}")

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

    async def cancel_all(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
