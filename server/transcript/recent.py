"""The messages a store appended lately, per session, so the agent loop's view state is fed from the records it
just wrote instead of reading them back (one round trip to the database per model call fewer).

An entry is exact: it holds every message of its session with a seq after ``base``, in order, as stored. It is
noted by the writer thread right after the append commits, from the session's ``last_seq`` that transaction read:
an append that does not continue the entry (another process or store wrote in between, a fork, the first append)
starts it afresh from there. A seq the entry does not cover is read from the database as before. What a reader
was given is dropped (the loop's state looks after every append), so an entry holds a few messages, not a history.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from server.transcript.records import StoredMessage

KEEP_MESSAGES = 256  # per session, at most: what was appended since its state last looked (a few, usually)
KEEP_SESSIONS = 32  # sessions noted, the least recently appended to dropped first


class RecentAppends:
    def __init__(self) -> None:
        self._lock = threading.Lock()  # noted on the writer thread, read on the event loop's
        self._by_session: OrderedDict[str, tuple[int, list[StoredMessage]]] = OrderedDict()

    def note(self, session_id: str, before: int, stored: Sequence[StoredMessage]) -> None:
        """``stored`` was appended (committed) after the session's seq ``before``."""
        with self._lock:
            entry = self._by_session.pop(session_id, None)
            if entry is not None and entry[0] + len(entry[1]) == before:
                base, held = entry[0], entry[1] + list(stored)
            else:
                base, held = before, list(stored)
            if len(held) > KEEP_MESSAGES:
                base, held = held[-KEEP_MESSAGES - 1].seq, held[-KEEP_MESSAGES:]
            self._by_session[session_id] = (base, held)
            while len(self._by_session) > KEEP_SESSIONS:
                self._by_session.popitem(last=False)

    def after(self, session_id: str, seq: int) -> list[StoredMessage] | None:
        """Every message this store appended to the session after ``seq`` (up to its last append), or None when
        that is not known here (read them). Those up to ``seq`` are dropped: the reader has them."""
        with self._lock:
            entry = self._by_session.get(session_id)
            if entry is None or not entry[0] <= seq <= entry[0] + len(entry[1]):
                return None
            known = entry[1][seq - entry[0] :]
            self._by_session[session_id] = (seq, list(known))
            return known

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._by_session.pop(session_id, None)
