"""File checkpoint rows (schema v4): what a file-writing tool call found before it wrote, and what it left.

A mixin of ``Store``: the rows live in the transcript database, so a session's delete drops them with it. The
file contents themselves are blobs in the data home (``server.checkpoints.blobs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.transcript.queries import Queries
from server.transcript.records import now


@dataclass(frozen=True)
class CheckpointRow:
    id: int
    kind: str  # "tool" (a write by a tool call) or "rewind" (what rewindFiles left)
    turn_id: str | None
    tool_call_id: str | None
    path: str  # relative to the session folder, as POSIX
    change: str  # "created" | "modified" (tool rows); "restored" | "removed" (rewind rows)
    before_hash: str | None  # sha256 of the content before; None when absent or not kept
    size: int
    restorable: bool
    note: str | None
    after_hash: str | None  # sha256 of what the write left; None when it left no file
    done: bool  # the write finished (after_hash is known)
    created_at: str


@dataclass(frozen=True)
class TurnStart:
    turn_id: str
    seq: int
    created_at: str


_COLUMNS = (
    "id, kind, turn_id, tool_call_id, path, change, before_hash, size, restorable, note, after_hash, done, created_at"
)


class CheckpointQueries(Queries):
    """``Store`` methods for ``file_checkpoints``; ``_write``/``_read`` are the store's own transaction helpers."""

    async def add_checkpoint(
        self,
        session_id: str,
        *,
        kind: str,
        turn_id: str | None,
        tool_call_id: str | None,
        path: str,
        change: str,
        before_hash: str | None,
        size: int,
        restorable: bool,
        note: str | None = None,
        after_hash: str | None = None,
        done: bool = False,
    ) -> int:
        cur = await self._transact(
            lambda db: db.execute(
                "INSERT INTO file_checkpoints (session_id, kind, turn_id, tool_call_id, path, change, before_hash,"
                " size, restorable, note, after_hash, done, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    session_id,
                    kind,
                    turn_id,
                    tool_call_id,
                    path,
                    change,
                    before_hash,
                    size,
                    int(restorable),
                    note,
                    after_hash,
                    int(done),
                    now(),
                ),
            )
        )
        assert cur.lastrowid is not None  # set by every INSERT
        return cur.lastrowid

    async def finish_checkpoint(self, checkpoint_id: int, after_hash: str | None) -> None:
        await self._transact(
            lambda db: db.execute(
                "UPDATE file_checkpoints SET after_hash = ?, done = 1 WHERE id = ?", (after_hash, checkpoint_id)
            )
        )

    async def drop_checkpoint(self, checkpoint_id: int) -> None:
        """The write did not happen (the tool failed before writing): nothing to restore."""
        await self._transact(lambda db: db.execute("DELETE FROM file_checkpoints WHERE id = ?", (checkpoint_id,)))

    async def list_checkpoints(self, session_id: str) -> list[CheckpointRow]:
        rows = await self._read(
            f"SELECT {_COLUMNS} FROM file_checkpoints WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [_row(r) for r in rows]

    async def checkpoint_bytes(self, session_id: str) -> int:
        """Bytes of the distinct contents kept for the session (what its cap counts)."""
        rows = await self._read(
            "SELECT COALESCE(SUM(size), 0) FROM (SELECT before_hash, MAX(size) AS size FROM file_checkpoints"
            " WHERE session_id = ? AND before_hash IS NOT NULL AND restorable = 1 GROUP BY before_hash)",
            (session_id,),
        )
        return int(rows[0][0])

    async def turn_starts(self, session_id: str) -> list[TurnStart]:
        """Each turn of the session with its first message's seq and time, in order."""
        rows = await self._read(
            "SELECT turn_id, MIN(seq), MIN(created_at) FROM messages WHERE session_id = ? AND turn_id IS NOT NULL"
            " GROUP BY turn_id ORDER BY MIN(seq)",
            (session_id,),
        )
        return [TurnStart(*r) for r in rows]


def _row(r: tuple[Any, ...]) -> CheckpointRow:
    return CheckpointRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], bool(r[8]), r[9], r[10], bool(r[11]), r[12])
