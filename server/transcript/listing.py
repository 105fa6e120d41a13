"""The session list with each session's usage totals (``listSessions``), read as one row.

A mixin of ``Store``. Python's ``sqlite3`` lets go of the GIL around every step of a statement, and the reader's
thread must win it back once per row: while the event loop is busy (a hundred turns at once) each win can wait out
the interpreter's switch interval. So SQLite builds the whole answer, the sessions and their usage totals (the v13
table a trigger keeps, ``transcript.schema``), as one JSON array in one statement: one trip to the reader's thread,
one step, one row back, decoded at once (issue 50).
"""

from __future__ import annotations

from typing import Any

import msgspec

from server.transcript.queries import Queries
from server.transcript.records import StoredSession
from server.transcript.session_rows import SESSION_COLUMNS

TOTAL_FIELDS = ("inputTokens", "outputTokens", "cachedInputTokens", "cacheWriteTokens")  # then costUsd
USAGE_COLUMNS = "input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, cost_usd"
_COLUMNS = [c.strip() for c in SESSION_COLUMNS.split(",")]


def usage_of(row: list[Any] | tuple[Any, ...]) -> dict[str, Any]:
    """A ``session_usage`` row's figures (``USAGE_COLUMNS``) as the wire's totals: ``costUsd`` None when no call
    had a price."""
    return {**{f: int(v) for f, v in zip(TOTAL_FIELDS, row)}, "costUsd": row[len(TOTAL_FIELDS)]}


class ListingQueries(Queries):
    """``Store.list_sessions_with_totals``."""

    async def list_sessions_with_totals(
        self, cwd: str | None = None, limit: int | None = None, include_children: bool = False
    ) -> tuple[list[StoredSession], dict[str, dict[str, Any]]]:
        """What ``list_sessions``, and ``usage_totals`` of the sessions it lists, answer: in one read."""
        where, args = "WHERE 1", list[Any]()
        if cwd is not None:
            where += " AND cwd = ?"
            args.append(cwd)
        if not include_children:
            where += " AND parent_tool_call_id IS NULL"
        args.append(limit if limit and limit > 0 else -1)
        listed = ", ".join(f"s.{c}" for c in _COLUMNS)
        usage = ", ".join(f"u.{c}" for c in USAGE_COLUMNS.split(", "))
        sql = (
            f"WITH s AS (SELECT {SESSION_COLUMNS}, row_number() OVER (ORDER BY updated_at DESC, id) AS n"
            f" FROM sessions {where} ORDER BY updated_at DESC, id LIMIT ?)"
            f" SELECT json_group_array(json_array(s.n, {listed}, u.session_id IS NOT NULL, {usage}))"
            " FROM s LEFT JOIN session_usage AS u ON u.session_id = s.id"
        )
        rows = await self._read(sql, args)
        found = sorted(msgspec.json.decode(rows[0][0]), key=lambda r: r[0]) if rows and rows[0][0] else []
        width = len(_COLUMNS)
        sessions = [StoredSession(*r[1 : 1 + width]) for r in found]
        totals = {r[1]: usage_of(r[2 + width :]) for r in found if r[1 + width]}
        return sessions, totals
