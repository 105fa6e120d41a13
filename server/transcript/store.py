"""The SQLite transcript store (R-SRC-1, R-SRC-2, B-SEARCH-1).

One database file under ``$THREADLINE_HOME``. WAL, ``busy_timeout`` and foreign keys are on; every write is one
explicit ``BEGIN IMMEDIATE`` transaction run whole on the single writer connection's own thread
(``transcript.writer``), one round trip per transaction, queued in order, so no ``database is locked`` ever
surfaces. Reads use their own connection (aiosqlite) and see committed data only.

Stored messages are append-only: nothing here updates or deletes a message except ``delete_session``.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from server.errors import SessionNotFound, StorageFailure
from server.private_files import private_folder
from server.transcript import fts
from server.transcript.artifact_rows import ArtifactQueries
from server.transcript.calibrations import UPSERT_CALIBRATION, CalibrationQueries
from server.transcript.checkpoints import CheckpointQueries
from server.transcript.db_file import create_whole, refuse_empty_file
from server.transcript.drafts import DraftQueries
from server.transcript.events import EventQueries
from server.transcript.listing import ListingQueries
from server.transcript.recent import RecentAppends
from server.transcript.records import (
    MESSAGE_COLUMNS,
    NewMessage,
    SearchHit,
    StoredMessage,
    TranscriptPage,
    dumps,
    loads,
    now,
    page_size,
    searchable_text,
)
from server.transcript.schema import migrate
from server.transcript.session_rows import SessionQueries
from server.transcript.view_state import ViewSnapshotter, ViewStateQueries
from server.transcript.writer import BUSY_TIMEOUT_MS, Writer

T = TypeVar("T")

log = logging.getLogger(__name__)

TokenEstimator = Callable[[dict[str, Any]], int]

_READING: ContextVar[str | None] = ContextVar("reading", default=None)


class WriteInRead(RuntimeError):
    """A write to the store inside ``read_only``: a bug in a read, never a request's fault."""


@contextmanager
def read_only(what: str) -> Iterator[None]:
    """Within this block (and the tasks it starts) any write to a store raises ``WriteInRead``: the edge runs
    every read handler so (``server.methods.registry``), so a read never writes."""
    token = _READING.set(what)
    try:
        yield
    finally:
        _READING.reset(token)


class Store(
    SessionQueries,
    ListingQueries,
    DraftQueries,
    EventQueries,
    ArtifactQueries,
    CheckpointQueries,
    CalibrationQueries,
    ViewStateQueries,
):
    """Async access to one transcript database. Open with ``await Store.open(path)``; ``async with`` it (or call
    ``close``): aiosqlite's worker threads are not daemons, so a process that leaves a store open never exits."""

    def __init__(
        self,
        path: Path,
        writer: Writer,
        reader: aiosqlite.Connection,
        estimate: TokenEstimator | None,
        view_snapshotter: ViewSnapshotter | None = None,
    ):
        self.path = path
        self.owner = "local"  # who this process's drafts belong to (``server.transcript.drafts.Lease``)
        self._writer = writer
        self._reader = reader
        self._estimate = estimate
        self._recent = RecentAppends()
        self._view_snapshotter = view_snapshotter
        self._snapshot_at: dict[str, tuple[int, int | None]] = {}  # session -> (newest snapshot's seq, next due)

    @classmethod
    async def open(
        cls, path: Path, estimate: TokenEstimator | None = None, view_snapshotter: ViewSnapshotter | None = None
    ) -> Store:
        """Migrate then open. A folder that cannot be written gives a ``StorageFailure`` naming the path.

        ``estimate`` gives each appended message its token estimate; ``view_snapshotter`` makes the view
        snapshots kept as messages are appended (``transcript.view_state``); None keeps none. The store does not
        know the pipeline: the server (and any program that wants a long history quick to open) opens it with both
        through ``server.agent.views.open_store``."""
        path = Path(path)
        cls.prepare(path)
        writer = await Writer.open(path)
        try:
            reader = await _connect(path)
        except BaseException:
            await writer.close()
            raise
        return cls(path, writer, reader, estimate, view_snapshotter)

    @staticmethod
    def prepare(path: Path) -> None:
        """The file made and migrated, synchronously: what ``open`` does first (``StorageFailure`` naming the path).
        A front end may run it in a thread while it imports the rest (``threadline exec``); ``open`` then finds it
        done."""
        refuse_empty_file(path)
        try:
            private_folder(path.parent)  # the data folder, and each made on the way to it, 0700
            if not path.exists():
                create_whole(path)
            with sqlite3.connect(path, isolation_level=None) as conn:
                conn.execute("PRAGMA journal_mode=WAL")
                # as the store's own connections: no fsync per migration (a new store runs them all); WAL keeps the
                # file whole, and a migration a power cut lost is applied again at the next open
                conn.execute("PRAGMA synchronous = NORMAL")
                migrate(conn)
            conn.close()
        except (sqlite3.Error, OSError) as exc:
            raise StorageFailure(f"cannot open the transcript database at {path}: {exc}") from exc

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        # closing twice or after a crash must not mask the real error
        with contextlib.suppress(Exception):
            await self._writer.close()
        with contextlib.suppress(Exception):
            await self._reader.close()

    async def _transact(self, fn: Callable[[sqlite3.Connection], T], then: Callable[[T], None] | None = None) -> T:
        """``fn(connection)`` as one ``BEGIN IMMEDIATE`` transaction on the writer's thread, one round trip: all of
        it commits or none of it does. ``then(result)`` runs on that thread once it has committed."""
        if (reading := _READING.get()) is not None:
            raise WriteInRead(f"{reading} is a read and may not write to the store")
        try:
            return await self._writer.transaction(fn, then)
        except sqlite3.Error as exc:
            raise StorageFailure(f"cannot write the transcript: {exc}") from exc

    # --- messages -----------------------------------------------------------------------------------

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[NewMessage],
        turn_id: str | None = None,
        events: Sequence[tuple[str, dict[str, Any]]] = (),
        calibrations: Sequence[tuple[str, float, int]] = (),
    ) -> list[StoredMessage]:
        """Append in one transaction; seqs continue the session's sequence. Validation happens first. ``events``
        (kind, payload) and ``calibrations`` (model, factor, samples) are stored in the same transaction (a model
        call's ``usage`` and learned factor with its answer): all of a model call's writes are one round trip."""
        for i, msg in enumerate(messages):
            msg.validate(f"messages[{i}]")
        stamp = now()

        def append(db: sqlite3.Connection) -> tuple[int, list[StoredMessage]]:
            found = db.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if found is None:
                raise SessionNotFound(f"no session {session_id!r}")
            first = found[0]
            rows, texts, stored = [], [], []
            for seq, msg in enumerate(messages, first + 1):
                row, record = self._row(session_id, seq, msg, turn_id, stamp)
                rows.append(row)
                texts.append(searchable_text(msg))
                stored.append(record)
            # One statement per table, not one per message (an import of thousands of messages).
            db.executemany(
                f"INSERT INTO messages (session_id, {MESSAGE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows
            )
            if any(texts):
                db.executemany(
                    "INSERT INTO messages_fts (rowid, text) SELECT id, ? FROM messages WHERE session_id = ? AND seq = ?",
                    [(text, session_id, r.seq) for r, text in zip(stored, texts, strict=True) if text],
                )
            last = first + len(stored)
            db.execute("UPDATE sessions SET last_seq = ?, updated_at = ? WHERE id = ?", (last, stamp, session_id))
            if turn_id is not None and any(m.role == "assistant" for m in messages):
                # the answer is stored, so its draft goes in the same transaction
                db.execute("DELETE FROM drafts WHERE session_id = ? AND turn_id = ?", (session_id, turn_id))
            if events:
                db.executemany(
                    "INSERT INTO events (session_id, turn_id, kind, payload, created_at) VALUES (?,?,?,?,?)",
                    [(session_id, turn_id, kind, dumps(payload), stamp) for kind, payload in events],
                )
            if calibrations:
                db.executemany(UPSERT_CALIBRATION, [(*learned, stamp) for learned in calibrations])
            return first, stored

        first, stored = await self._transact(append, then=lambda done: self._recent.note(session_id, *done))
        if self._view_snapshotter is not None and stored:
            try:
                await self._advance_view_snapshots(session_id, first, stored[-1].seq)
            except Exception:
                log.exception("session %s: could not make its view snapshot; its next view reads more", session_id)
        return stored

    def _row(
        self, session_id: str, seq: int, msg: NewMessage, turn_id: str | None, stamp: str
    ) -> tuple[tuple[Any, ...], StoredMessage]:
        """A message's row and the record read back from it: JSON columns decoded as a read decodes them, so the
        records a view state is fed from the append (``recent``) are the ones a read would give."""
        tool_calls, images, items = dumps(msg.tool_calls), dumps(msg.images), dumps(msg.reasoning_items)
        record = StoredMessage(
            seq,
            msg.role,
            msg.content,
            stamp,
            loads(tool_calls),
            msg.tool_call_id,
            msg.name,
            msg.reasoning,
            loads(images),
            msg.status,
            turn_id,
            reasoning_items=loads(items),
            tool_status=msg.tool_status,
        )
        tokens = self._estimate(record.to_openai()) if self._estimate else None
        row = (
            session_id,
            seq,
            msg.role,
            msg.content,
            tool_calls,
            msg.tool_call_id,
            msg.name,
            msg.reasoning,
            images,
            msg.status,
            turn_id,
            stamp,
            tokens,
            items,
            msg.tool_status,
        )
        return row, replace(record, tokens=tokens)

    def appended_after(self, session_id: str, seq: int) -> list[StoredMessage] | None:
        """The messages this store appended to the session after ``seq``, without reading them back; None when it
        does not know them all (read them). Right after an append of its own, the agent loop's view state is fed
        so (``server.agent.view_resume``); another process's appends since are seen at the next append."""
        return self._recent.after(session_id, seq)

    async def read_messages(
        self, session_id: str, after_seq: int | None = None, limit: int | None = None
    ) -> TranscriptPage:
        """A page of messages with ``seq > after_seq``; ``next_seq`` is set when more follow."""
        size = page_size(limit)
        rows = await self._read(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, after_seq or 0, size + 1),
        )
        if not rows:  # only then can it be an unknown session: the agent loop reads after each append
            await self.get_session(session_id)
        items = [_message(row) for row in rows[:size]]
        return TranscriptPage(items, items[-1].seq if len(rows) > size else None)

    async def all_messages(self, session_id: str, after_seq: int = 0) -> list[StoredMessage]:
        """Every message after ``after_seq``, in order (what a turn reads at its start)."""
        rows = await self._read(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, after_seq),
        )
        return [_message(row) for row in rows]

    async def messages_before(self, session_id: str, before_seq: int) -> tuple[int, list[StoredMessage]]:
        """How many messages precede ``before_seq``, and the system messages among them, in order: what a view
        state resumed from a compaction's tail needs of the older history (B-CACHE-3, cold start)."""
        count = await self._read(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND seq < ?", (session_id, before_seq)
        )
        rows = await self._read(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq < ? AND role = 'system' ORDER BY seq",
            (session_id, before_seq),
        )
        return count[0][0], [_message(row) for row in rows]

    async def search(self, query: str, session_id: str | None = None, limit: int | None = None) -> list[SearchHit]:
        """B-SEARCH-1: full-text search; a query that is not valid FTS syntax is searched as plain words."""
        size = min(limit if limit and limit > 0 else 20, 200)
        sql = (
            "SELECT m.session_id, m.seq, m.role, snippet(messages_fts, 0, '[', ']', '…', 16)"
            " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid WHERE messages_fts MATCH ?"
        )
        base: list[Any] = []
        if session_id is not None:
            await self.get_session(session_id)
            sql += " AND m.session_id = ?"
            base.append(session_id)
        sql += " ORDER BY rank LIMIT ?"
        for match in fts.candidates(query):
            try:
                rows = await self._read(sql, [match, *base, size])
            except StorageFailure as exc:
                if not isinstance(exc.__cause__, sqlite3.OperationalError):
                    raise
                continue
            if rows or not fts.has_cjk(query):
                return [SearchHit(*row) for row in rows]
            break
        return await self._substring_search(query, session_id, size) if fts.has_cjk(query) else []

    async def _substring_search(self, query: str, session_id: str | None, size: int) -> list[SearchHit]:
        """unicode61 indexes a run of CJK characters as one token, so a Chinese word inside a sentence is found
        by substring instead: a scan, but only for queries FTS could not answer."""
        needle = query.strip()
        sql = (
            "SELECT m.session_id, m.seq, m.role, f.text FROM messages_fts f JOIN messages m ON m.id = f.rowid"
            " WHERE instr(f.text, ?) > 0"
        )
        args: list[Any] = [needle]
        if session_id is not None:
            sql += " AND m.session_id = ?"
            args.append(session_id)
        rows = await self._read(sql + " ORDER BY m.id DESC LIMIT ?", [*args, size])
        return [SearchHit(sid, seq, role, fts.snippet_around(text, needle)) for sid, seq, role, text in rows]

    # --- plumbing -----------------------------------------------------------------------------------

    async def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        try:  # one round trip to aiosqlite's thread, not three (execute, fetch, close)
            return list(await self._reader.execute_fetchall(sql, args))
        except sqlite3.Error as exc:
            raise StorageFailure(f"cannot read the transcript: {exc}") from exc


async def _connect(path: Path) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
    await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    await conn.execute("PRAGMA foreign_keys = ON")
    await conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _message(row: tuple[Any, ...]) -> StoredMessage:
    (
        seq,
        role,
        content,
        tool_calls,
        tool_call_id,
        name,
        reasoning,
        images,
        status,
        turn_id,
        created_at,
        tokens,
        reasoning_items,
        tool_status,
    ) = row
    return StoredMessage(
        seq,
        role,
        content,
        created_at,
        loads(tool_calls),
        tool_call_id,
        name,
        reasoning,
        loads(images),
        status,
        turn_id,
        tokens,
        loads(reasoning_items),
        tool_status,
    )
