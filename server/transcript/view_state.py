"""What a restarted server needs of a session's request views besides the transcript (schema v9). A mixin of
``Store``.

Both rows are derived data, one per session, the last writer winning: ``view_resume`` is where a view built on the
whole history put its safe tail and, as JSON, what it knew of everything before it (a compaction head), so the
next server resumes from there instead of reading every message (B-CACHE-3, cold start); ``sent_requests`` is the
last request sent to the provider as one digest per message (``stablePrefixTokens``).
A missing or unreadable row only makes the next view read more, or its stable prefix 0.
"""

from __future__ import annotations

import json
from typing import Any

from server.transcript.queries import Queries

DIGEST_SIZE = 16  # bytes per message digest in ``sent_requests.digests``


class ViewStateQueries(Queries):
    """``Store`` methods for ``view_resume`` and ``sent_requests``."""

    async def save_view_resume(self, session_id: str, tail_seq: int, head: dict[str, Any]) -> None:
        async with self._write() as db:
            await db.execute(
                "INSERT INTO view_resume (session_id, tail_seq, head) VALUES (?,?,?)"
                " ON CONFLICT(session_id) DO UPDATE SET tail_seq = excluded.tail_seq, head = excluded.head",
                (session_id, tail_seq, json.dumps(head, separators=(",", ":"))),
            )

    async def view_resume(self, session_id: str) -> tuple[int, Any] | None:
        """``(tail_seq, head)`` as saved (``head`` decoded JSON, for the caller to validate), or None."""
        rows = await self._read("SELECT tail_seq, head FROM view_resume WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        try:
            return int(rows[0][0]), json.loads(rows[0][1])
        except (TypeError, ValueError):
            return None

    async def save_sent_request(self, session_id: str, digests: bytes) -> None:
        """``digests``: the messages' digests of ``DIGEST_SIZE`` bytes each, concatenated in order."""
        async with self._write() as db:
            await db.execute(
                "INSERT INTO sent_requests (session_id, digests) VALUES (?,?)"
                " ON CONFLICT(session_id) DO UPDATE SET digests = excluded.digests",
                (session_id, digests),
            )

    async def sent_request(self, session_id: str) -> list[bytes] | None:
        """The last request sent, as one digest per message, or None when none is stored (or the row is damaged)."""
        rows = await self._read("SELECT digests FROM sent_requests WHERE session_id = ?", (session_id,))
        blob = rows[0][0] if rows else None
        if not isinstance(blob, bytes) or len(blob) % DIGEST_SIZE:
            return None
        return [blob[i : i + DIGEST_SIZE] for i in range(0, len(blob), DIGEST_SIZE)]
