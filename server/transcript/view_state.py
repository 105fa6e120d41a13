"""What a restarted server needs of a session's request views besides the transcript (schema v9, v10, v12). A mixin
of ``Store``.

All rows are derived data. One per session, the last writer winning: ``view_resume`` is where a view built on the
whole history put its safe tail and, as JSON, what it knew of everything before it (a compaction head), so the
next server resumes from there instead of reading every message (B-CACHE-3, cold start); ``sent_requests`` is the
last request sent to the provider as one digest per message (``stablePrefixTokens``). A few per session:
``view_snapshots``, the view state the store itself snapshots as messages are appended (every ``SNAPSHOT_EVERY``
messages, the newest ``SNAPSHOTS_KEPT`` kept), so even a history no server has viewed (written through the
store's API) opens without reading all of it. The store only keeps them; what a head is, and how the next one
follows from the last, is the pipeline's (``server.context.fed.next_snapshots``, given to
``Store.open``). A missing or unreadable row only makes the next view read more, or its stable prefix 0.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from server.transcript.queries import Queries

if TYPE_CHECKING:
    from server.transcript.records import StoredMessage

DIGEST_SIZE = 16  # bytes per message digest in ``sent_requests.digests``
SNAPSHOT_EVERY = 1000  # messages appended after a session's newest snapshot before the next one is made
SNAPSHOTS_KEPT = 4  # per session: the newest; a view picks one with at least a window of tokens after it

# (previous snapshot's head JSON or None, the messages from its seq on (all: None), their token estimates, how
# many messages apart) -> the next ones as (seq, head JSON), in order: ``server.context.fed.next_snapshots``,
# given to ``Store.open`` by ``server.agent.views.open_store``.
ViewSnapshotter = Callable[[Any, list[dict[str, Any]], list[int | None], int], list[tuple[int, dict[str, Any]]]]


def _decoded(text: Any) -> Any:
    """A stored JSON column decoded, or None when it is damaged (the caller validates what it holds)."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


class ViewStateQueries(Queries):
    """``Store`` methods for ``view_resume``, ``sent_requests`` and ``view_snapshots``."""

    _view_snapshotter: ViewSnapshotter | None  # the store's (``Store.open``)
    _snapshot_at: dict[str, tuple[int, int | None]]  # the store's: session -> (newest snapshot's seq, next due)

    if TYPE_CHECKING:

        async def all_messages(self, session_id: str, after_seq: int = 0) -> list[StoredMessage]: ...

    async def save_view_resume(self, session_id: str, tail_seq: int, head: dict[str, Any]) -> None:
        await self._transact(
            lambda db: db.execute(
                "INSERT INTO view_resume (session_id, tail_seq, head) VALUES (?,?,?)"
                " ON CONFLICT(session_id) DO UPDATE SET tail_seq = excluded.tail_seq, head = excluded.head",
                (session_id, tail_seq, json.dumps(head, separators=(",", ":"))),
            )
        )

    async def view_resume(self, session_id: str) -> tuple[int, Any] | None:
        """``(tail_seq, head)`` as saved (``head`` decoded JSON, for the caller to validate), or None."""
        rows = await self._read("SELECT tail_seq, head FROM view_resume WHERE session_id = ?", (session_id,))
        head = _decoded(rows[0][1]) if rows else None
        return (int(rows[0][0]), head) if head is not None else None

    async def save_sent_request(self, session_id: str, digests: bytes) -> None:
        """``digests``: the messages' digests of ``DIGEST_SIZE`` bytes each, concatenated in order."""
        await self._transact(
            lambda db: db.execute(
                "INSERT INTO sent_requests (session_id, digests) VALUES (?,?)"
                " ON CONFLICT(session_id) DO UPDATE SET digests = excluded.digests",
                (session_id, digests),
            )
        )

    async def sent_request(self, session_id: str) -> list[bytes] | None:
        """The last request sent, as one digest per message, or None when none is stored (or the row is damaged)."""
        rows = await self._read("SELECT digests FROM sent_requests WHERE session_id = ?", (session_id,))
        blob = rows[0][0] if rows else None
        if not isinstance(blob, bytes) or len(blob) % DIGEST_SIZE:
            return None
        return [blob[i : i + DIGEST_SIZE] for i in range(0, len(blob), DIGEST_SIZE)]

    async def save_view_snapshot(self, session_id: str, seq: int, head: dict[str, Any]) -> None:
        """Keep a view snapshot; only the newest ``SNAPSHOTS_KEPT`` of the session stay."""
        self._snapshot_at.pop(session_id, None)  # the store's next append reads where the newest is again
        data = json.dumps(head, separators=(",", ":"))

        def save(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO view_snapshots (session_id, seq, head) VALUES (?,?,?)", (session_id, seq, data)
            )
            db.execute(
                "DELETE FROM view_snapshots WHERE session_id = ? AND seq NOT IN"
                " (SELECT seq FROM view_snapshots WHERE session_id = ? ORDER BY seq DESC LIMIT ?)",
                (session_id, session_id, SNAPSHOTS_KEPT),
            )

        await self._transact(save)

    async def newest_view_snapshot_seq(self, session_id: str) -> int | None:
        rows = await self._read("SELECT MAX(seq) FROM view_snapshots WHERE session_id = ?", (session_id,))
        return rows[0][0] if rows and rows[0][0] is not None else None

    async def tokens_from(self, session_id: str, seq: int) -> int:
        """The store's estimate of the session's messages from ``seq`` on (those without one count as none)."""
        rows = await self._read(
            "SELECT COALESCE(SUM(tokens), 0) FROM messages WHERE session_id = ? AND seq >= ?", (session_id, seq)
        )
        return int(rows[0][0])

    async def view_snapshots(self, session_id: str) -> list[tuple[int, int, Any]]:
        """The session's view snapshots, newest first, as ``(seq, tokens, head)``: ``tokens`` the store's estimate
        of the messages from ``seq`` on (messages without one count as none), ``head`` decoded JSON (None when
        unreadable), for the caller to validate."""
        rows = await self._read(
            "SELECT seq, head FROM view_snapshots WHERE session_id = ? ORDER BY seq DESC", (session_id,)
        )
        return [(int(seq), await self.tokens_from(session_id, seq), _decoded(head)) for seq, head in rows]

    async def _advance_view_snapshots(self, session_id: str, before: int, last: int) -> None:
        """After an append that took the session from seq ``before`` to ``last``: make its next view snapshots
        once ``SNAPSHOT_EVERY`` messages follow its newest one, from that one's head and the messages since
        (about a thousand; a long append gets one every thousand). A session that has none and already held more
        than twice that many before this append (stored by a version before schema v10) gets none: that would
        read its whole history in an append; its first view reads it instead, once, and leaves one for the next
        write to keep (``server.agent.view_resume``). When none can be made (the newest one's head is damaged, say),
        the next try is as far off."""
        if session_id not in self._snapshot_at:
            newest = await self.newest_view_snapshot_seq(session_id) or 0
            due = newest + SNAPSHOT_EVERY if newest or before <= 2 * SNAPSHOT_EVERY else None
            self._snapshot_at[session_id] = (newest, due)
        known, due = self._snapshot_at[session_id]
        if due is None or last < due or self._view_snapshotter is None:
            return
        head = None
        if known:
            rows = await self._read(
                "SELECT head FROM view_snapshots WHERE session_id = ? AND seq = ?", (session_id, known)
            )
            if not rows:  # pruned by another server on the same database: start from the newest there is
                del self._snapshot_at[session_id]
                return
            head = _decoded(rows[0][0])
        made = []
        if head is not None or not known:
            messages = await self.all_messages(session_id, after_seq=known - 1 if known else 0)
            made = self._view_snapshotter(
                head, [m.to_openai() for m in messages], [m.tokens for m in messages], SNAPSHOT_EVERY
            )
        if not made or made[-1][0] <= known:
            self._snapshot_at[session_id] = (known, last + SNAPSHOT_EVERY)
            return
        for seq, point in made[-SNAPSHOTS_KEPT:]:
            await self.save_view_snapshot(session_id, seq, point)
        self._snapshot_at[session_id] = (made[-1][0], made[-1][0] + SNAPSHOT_EVERY)
