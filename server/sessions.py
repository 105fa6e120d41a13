"""The one home of what this process holds of a session: a ``Session`` handle per live session.

A handle carries everything live about its session: the incremental view state (B-INC-1), the view snapshot and
resume point a read learned and has not written, the last request sent (``stablePrefixTokens``), the remembered
"allow always" grants, the running usage totals, the running turn and those queued behind it, the MCP choices made
for it (the client's servers, the project servers allowed or refused), the project hook file allowed or refused,
and the background processes its commands started.
Services receive the handle; nothing else keeps per-session state.

This module sits above what it holds: each slot is a small class defined by the package that works on it
(``agent.view_resume.ViewState``, ``agent.digests.SentRequest``, ``mcp.service.McpChoices``,
``hooks.service.HookChoices``, ...), and those packages are handed the slot they use, never the handle, so none of
them imports this module. The handle owns every slot: it lets go of them, and forgets them, as one.

What is rebuilt from the store (view state, request digests, grants, totals) is held for the most recently used
sessions only: past ``capacity`` the least recently used idle session lets go of it, and rebuilds it when next
used. What exists only in memory (a running turn, the MCP and hook choices, an unsaved view snapshot or resume
point) is never dropped: a session holding it keeps its handle. A session whose turn is running lets go of
nothing: its turn holds the same grants and totals, and a second copy would let a revoked grant live on in that
turn. ``Sessions.delete`` ends all of it in one call.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from server.agent.digests import SentRequest
from server.agent.remembered import RememberedApprovals, load_remembered
from server.agent.totals import TurnTotals, load_totals
from server.agent.turns import SessionTurns
from server.agent.view_resume import ViewState
from server.hooks.service import HookChoices
from server.mcp.service import McpChoices
from server.tools.running import BackgroundProcesses

if TYPE_CHECKING:
    from server.transcript import Store

KEPT_SESSIONS = 16


class Session:
    """Everything this process holds live about one session (see the module's docstring)."""

    def __init__(self, session_id: str, store: Callable[[], Store]) -> None:
        self.id = session_id
        self._store = store
        # Each slot is defined by the package that works on it, which is handed the slot, never the handle.
        # The view state and the last request sent are rebuilt from the store, but for the view's unsaved resume
        # points (``server.agent.view_resume.ViewState``, ``server.agent.digests.SentRequest``).
        self.view = ViewState(session_id)
        self.sent = SentRequest(session_id)
        self._approvals: RememberedApprovals | None = None  # loaded from the session's events on first use
        self._totals: TurnTotals | None = None  # summed from the session's ``usage`` events on first use
        # Only in memory. What else a session comes to hold live belongs here too.
        self.turns = SessionTurns(session_id)
        self.mcp = McpChoices()  # server.mcp.service
        self.hooks = HookChoices()  # server.hooks.service
        self.processes = BackgroundProcesses(session_id)  # server.tools.running: stopped with the session

    async def approvals(self) -> RememberedApprovals:
        """The session's "allow always" grants, loaded from its events while the session is held in memory."""
        if self._approvals is None:
            loaded = await load_remembered(self._store(), self.id)
            if self._approvals is None:  # a concurrent load may have won: keep the first
                self._approvals = loaded
        await self._approvals.refresh(self._store(), self.id)  # what another server granted or revoked since
        return self._approvals

    async def totals(self) -> TurnTotals:
        """The session's running usage totals, summed from its stored ``usage`` events when first needed."""
        if self._totals is None:
            loaded = await load_totals(self._store(), self.id)
            if self._totals is None:
                self._totals = loaded
        return self._totals

    def let_go(self) -> None:
        """Drop what the store can rebuild."""
        self.view.let_go()
        self.sent.let_go()
        self._approvals = self._totals = None

    @property
    def holds_memory_only_state(self) -> bool:
        return (
            self.turns.is_running()
            or bool(self.mcp)
            or bool(self.hooks)
            or bool(self.view.unsaved)
            or bool(self.processes)
        )


class Sessions:
    """The live sessions of this process, by id."""

    def __init__(
        self,
        store: Callable[[], Store],
        capacity: int = KEPT_SESSIONS,
        on_forget: Callable[[Session], None] = lambda _session: None,
    ) -> None:
        self.capacity = capacity
        self._store = store
        self._on_forget = on_forget  # releases what others keep for a session (its MCP servers)
        self._handles: dict[str, Session] = {}
        self._warm: OrderedDict[str, None] = OrderedDict()  # holding what the store can rebuild, oldest first
        self._deleted: set[str] = set()

    def get(self, session_id: str) -> Session:
        """The session's handle (a new, empty one if none is held), now the most recently used."""
        if session_id in self._deleted:
            gone = Session(session_id, self._store)  # never held: a turn read before the delete cannot start
            gone.turns.deleted = True
            return gone
        handle = self._handles.get(session_id)
        if handle is None:
            handle = self._handles[session_id] = Session(session_id, self._store)
        self._warm[session_id] = None
        self._warm.move_to_end(session_id)
        self._let_go_of_least_recent()
        return handle

    def peek(self, session_id: str) -> Session | None:
        """The session's handle if its state is held, without touching its place in the order."""
        return self._handles.get(session_id) if session_id in self._warm else None

    def forget(self, session_id: str) -> None:
        """Forget the session in this process (its MCP servers stop unless another session uses them)."""
        self._warm.pop(session_id, None)
        handle = self._handles.pop(session_id, None)
        if handle is not None:
            self._on_forget(handle)

    async def delete(self, session_id: str, erase: Callable[[], Awaitable[object]]) -> None:
        """Delete a session: no turn starts in it from now on, its turns are cancelled and awaited, ``erase()``
        removes what is stored of it, and this process forgets it. If ``erase`` fails the session lives on."""
        handle = self.get(session_id)
        await handle.turns.stop_for_delete()
        try:
            await erase()
        except BaseException:
            handle.turns.undelete()
            raise
        self._deleted.add(session_id)
        await handle.processes.stop_all()  # what it left running dies with it
        self.forget(session_id)

    def live(self) -> list[Session]:
        return list(self._handles.values())

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._warm

    def __len__(self) -> int:
        return len(self._warm)

    def _let_go_of_least_recent(self) -> None:
        excess = len(self._warm) - self.capacity
        newest = next(reversed(self._warm))
        for session_id in list(self._warm):
            if excess <= 0:
                return
            handle = self._handles[session_id]
            if handle.turns.is_running() or session_id == newest:
                continue
            del self._warm[session_id]
            handle.let_go()
            if not handle.holds_memory_only_state:
                del self._handles[session_id]
            excess -= 1
