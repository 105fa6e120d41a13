"""The one home of what this process holds of a session between requests, all of it rebuilt from the store.

A ``SessionState`` carries the incremental view state (B-INC-1), the last request sent (``stablePrefixTokens``),
the remembered "allow always" grants and the running usage totals. ``Sessions`` keeps them for the most recently
used sessions only: past ``capacity`` the least recently used idle one is dropped, and rebuilt from the store
when next used; ``deleteSession`` forgets a session at once. A session whose turn is running is never dropped:
its turn holds the same grants and totals, and a second copy would let a revoked grant live on in that turn.
The running turn itself stays with ``server.agent.turns.TurnManager``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.agent.remembered import RememberedApprovals
    from server.agent.totals import TurnTotals
    from server.context.incremental import IncrementalView

KEPT_SESSIONS = 16


@dataclass
class SessionState:
    view: IncrementalView | None = None  # fed only the messages stored since it last looked
    sent: Sequence[dict[str, Any]] | None = None  # the last request this process sent, as sent
    sent_digests: list[bytes] | None = None  # else the last one stored, one digest a message (None: not read yet)
    resume_seq: int = 0  # the tail of the view resume point this process knows is stored (0: none)
    full_for: int | None = None  # the compaction (tail seq) a resumed state fell short for: held whole since
    approvals: RememberedApprovals | None = None  # loaded from the session's events on first use
    totals: TurnTotals | None = None  # summed from the session's ``usage`` events on first use


class Sessions:
    def __init__(self, capacity: int = KEPT_SESSIONS, busy: Callable[[str], bool] = lambda _id: False) -> None:
        self.capacity = capacity
        self._busy = busy  # whether a session has a running turn (and must stay)
        self._live: OrderedDict[str, SessionState] = OrderedDict()

    def get(self, session_id: str) -> SessionState:
        """The session's live state (a new, empty one if none is held), now the most recently used."""
        live = self._live.get(session_id)
        if live is None:
            live = self._live[session_id] = SessionState()
        self._live.move_to_end(session_id)
        self._drop_least_recent()
        return live

    def peek(self, session_id: str) -> SessionState | None:
        """The session's live state if held, without touching its place in the order."""
        return self._live.get(session_id)

    def forget(self, session_id: str) -> None:
        self._live.pop(session_id, None)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._live

    def __len__(self) -> int:
        return len(self._live)

    def _drop_least_recent(self) -> None:
        excess = len(self._live) - self.capacity
        for session_id in list(self._live):
            if excess <= 0:
                return
            if not self._busy(session_id) and session_id != next(reversed(self._live)):
                del self._live[session_id]
                excess -= 1
