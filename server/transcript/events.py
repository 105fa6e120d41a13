"""Event rows: what happened in a session besides its messages (compactions, usage, approvals, notices).

A mixin of ``Store``; payloads are JSON objects, read back as dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.transcript.listing import USAGE_COLUMNS, usage_of
from server.transcript.queries import Queries
from server.transcript.records import Event, dumps, loads, now


class EventQueries(Queries):
    """``Store`` methods for ``events``."""

    async def add_event(self, session_id: str, kind: str, payload: dict[str, Any], turn_id: str | None = None) -> Event:
        stamp = now()
        cur = await self._transact(
            lambda db: db.execute(
                "INSERT INTO events (session_id, turn_id, kind, payload, created_at) VALUES (?,?,?,?,?)",
                (session_id, turn_id, kind, dumps(payload), stamp),
            )
        )
        assert cur.lastrowid is not None  # set by every INSERT
        return Event(cur.lastrowid, session_id, kind, payload, stamp, turn_id)

    async def list_events(
        self,
        session_id: str,
        kind: str | None = None,
        *,
        kinds: Sequence[str] = (),
        after_id: int = 0,
        limit: int | None = None,
    ) -> list[Event]:
        """Events in the order they happened; ``kind``/``kinds`` filter, ``after_id``/``limit`` page."""
        sql = "SELECT id, session_id, kind, payload, created_at, turn_id FROM events WHERE session_id = ? AND id > ?"
        args: list[Any] = [session_id, after_id]
        wanted = [kind] if kind is not None else list(kinds)
        if wanted:
            sql += f" AND kind IN ({', '.join('?' * len(wanted))})"
            args += wanted
        rows = await self._read(sql + " ORDER BY id LIMIT ?", [*args, limit if limit and limit > 0 else -1])
        return [Event(r[0], r[1], r[2], loads(r[3]), r[4], r[5]) for r in rows]

    async def latest_events(self, session_ids: Sequence[str], kind: str, having: str) -> dict[str, Event]:
        """``latest_event`` for many sessions in one read (``listSessions`` asks it of every session it lists:
        one read each would wait on the reader thread once per session while turns run, issue 50)."""
        if not session_ids:
            return {}
        rows = await self._read(
            "SELECT id, session_id, kind, payload, created_at, turn_id FROM events WHERE kind = ?"
            f" AND session_id IN ({', '.join('?' * len(session_ids))}) AND json_extract(payload, ?) IS NOT NULL"
            " ORDER BY id",
            [kind, *session_ids, f"$.{having}"],
        )
        return {r[1]: Event(r[0], r[1], r[2], loads(r[3]), r[4], r[5]) for r in rows}  # the newest wins

    async def usage_totals(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Each session's stored ``usage`` events summed (B-CACHE-5 figures and cost): what its model calls
        have used and cost so far, across restarts, with its subagents' calls (``childUsage``, B-SUB-1).
        ``costUsd`` is None when no call had a price."""
        if not session_ids:
            return {}
        rows = await self._read(  # kept as they are stored (schema v13), not summed here
            f"SELECT session_id, {USAGE_COLUMNS} FROM session_usage"
            f" WHERE session_id IN ({', '.join('?' * len(session_ids))})",
            list(session_ids),
        )
        return {r[0]: usage_of(r[1:]) for r in rows}

    async def latest_event(self, session_id: str, kind: str, having: str) -> Event | None:
        """The newest ``kind`` event whose payload has the top-level key ``having`` (e.g. the compaction a
        session's requests are built on, B-CACHE-3)."""
        rows = await self._read(
            "SELECT id, session_id, kind, payload, created_at, turn_id FROM events WHERE session_id = ? AND kind = ?"
            " AND json_extract(payload, ?) IS NOT NULL ORDER BY id DESC LIMIT 1",
            [session_id, kind, f"$.{having}"],
        )
        return Event(rows[0][0], rows[0][1], rows[0][2], loads(rows[0][3]), rows[0][4], rows[0][5]) if rows else None
