"""The SQLite transcript store (R-SRC-1, R-SRC-2, B-SEARCH-1).

One database file under ``$THREADLINE_HOME``. WAL, ``busy_timeout`` and foreign keys are on; every write is an
explicit ``BEGIN IMMEDIATE`` transaction on the single writer connection, serialised by an asyncio lock, so no
``database is locked`` ever surfaces. Reads use their own connection and see committed data only.

Stored messages are append-only: nothing here updates or deletes a message except ``delete_session``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiosqlite

from server.errors import SessionNotFound, StorageFailure
from server.transcript import fts
from server.transcript.artifact_rows import ArtifactQueries
from server.transcript.calibrations import CalibrationQueries
from server.transcript.checkpoints import CheckpointQueries
from server.transcript.db_file import create_whole, refuse_empty_file
from server.transcript.drafts import DraftQueries
from server.transcript.events import EventQueries
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
        writer: aiosqlite.Connection,
        reader: aiosqlite.Connection,
        estimate: TokenEstimator | None,
        view_snapshotter: ViewSnapshotter | None = None,
    ):
        self.path = path
        self.owner = "local"  # who this process's drafts belong to (``server.transcript.drafts.Lease``)
        self._writer = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()
        self._estimate = estimate
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
        writer = await _connect(path)
        reader = await _connect(path)
        return cls(path, writer, reader, estimate, view_snapshotter)

    @staticmethod
    def prepare(path: Path) -> None:
        """The file made and migrated, synchronously: what ``open`` does first (``StorageFailure`` naming the path).
        A front end may run it in a thread while it imports the rest (``threadline exec``); ``open`` then finds it
        done."""
        refuse_empty_file(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
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
        for conn in (self._writer, self._reader):
            # closing twice or after a crash must not mask the real error
            with contextlib.suppress(Exception):
                await conn.close()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: all of it commits or none of it does."""
        if (reading := _READING.get()) is not None:
            raise WriteInRead(f"{reading} is a read and may not write to the store")
        async with self._write_lock:
            try:
                if self._writer.in_transaction:  # never start inside a transaction something left open
                    await _to_completion(self._writer.execute("ROLLBACK"))
                await _to_completion(self._writer.execute("BEGIN IMMEDIATE"))
            except sqlite3.Error as exc:
                raise StorageFailure(f"cannot write the transcript: {exc}") from exc
            except asyncio.CancelledError:
                # BEGIN ran (or will) in aiosqlite's thread although we were cancelled: close what it opened.
                await _to_completion(self._rollback())
                raise
            try:
                yield self._writer
                await _to_completion(self._writer.execute("COMMIT"))
            except BaseException as exc:
                await _to_completion(self._rollback())
                if isinstance(exc, sqlite3.Error):
                    raise StorageFailure(f"cannot write the transcript: {exc}") from exc
                raise

    async def _write_one(self, sql: str, args: Sequence[Any]) -> aiosqlite.Cursor:
        """One statement on its own: SQLite makes it atomic by itself (autocommit), two round trips to aiosqlite's
        thread fewer than ``_write``'s BEGIN and COMMIT (the agent loop writes a usage event per model call)."""
        if (reading := _READING.get()) is not None:
            raise WriteInRead(f"{reading} is a read and may not write to the store")
        async with self._write_lock:
            try:
                if self._writer.in_transaction:  # never run inside a transaction something left open
                    await _to_completion(self._writer.execute("ROLLBACK"))
                cursor: aiosqlite.Cursor = await _to_completion(self._writer.execute(sql, args))
                return cursor
            except sqlite3.Error as exc:
                raise StorageFailure(f"cannot write the transcript: {exc}") from exc

    async def _rollback(self) -> None:
        if self._writer.in_transaction:
            with suppress(sqlite3.Error):
                await self._writer.execute("ROLLBACK")

    # --- messages -----------------------------------------------------------------------------------

    async def append_messages(
        self, session_id: str, messages: Sequence[NewMessage], turn_id: str | None = None
    ) -> list[StoredMessage]:
        """Append in one transaction; seqs continue the session's sequence. Validation happens first."""
        for i, msg in enumerate(messages):
            msg.validate(f"messages[{i}]")
        stamp = now()
        stored: list[StoredMessage] = []
        async with self._write() as db:
            # Every statement is a round trip to aiosqlite's thread (most of the agent loop's time per model call
            # was spent waiting on them): one each, no cursor to fetch from and close.
            found = list(await db.execute_fetchall("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)))
            if not found:
                raise SessionNotFound(f"no session {session_id!r}")
            first = seq = found[0][0]
            rows, texts = [], []
            for msg in messages:
                seq += 1
                record = StoredMessage(
                    seq,
                    msg.role,
                    msg.content,
                    stamp,
                    msg.tool_calls,
                    msg.tool_call_id,
                    msg.name,
                    msg.reasoning,
                    msg.images,
                    msg.status,
                    turn_id,
                    reasoning_items=msg.reasoning_items,
                    tool_status=msg.tool_status,
                )
                tokens = self._estimate(record.to_openai()) if self._estimate else None
                rows.append(
                    (
                        session_id,
                        seq,
                        msg.role,
                        msg.content,
                        dumps(msg.tool_calls),
                        msg.tool_call_id,
                        msg.name,
                        msg.reasoning,
                        dumps(msg.images),
                        msg.status,
                        turn_id,
                        stamp,
                        tokens,
                        dumps(msg.reasoning_items),
                        msg.tool_status,
                    )
                )
                texts.append(searchable_text(msg))
                stored.append(replace(record, tokens=tokens))
            # One statement per table, not two round trips to the database thread per message (an import of
            # thousands of messages spent most of its time there).
            await db.executemany(
                f"INSERT INTO messages (session_id, {MESSAGE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows
            )
            if any(texts):
                await db.executemany(
                    "INSERT INTO messages_fts (rowid, text) SELECT id, ? FROM messages WHERE session_id = ? AND seq = ?",
                    [(text, session_id, r.seq) for r, text in zip(stored, texts, strict=True) if text],
                )
            await db.execute("UPDATE sessions SET last_seq = ?, updated_at = ? WHERE id = ?", (seq, stamp, session_id))
            if turn_id is not None and any(m.role == "assistant" for m in messages):
                # the answer is stored, so its draft goes in the same transaction
                await db.execute("DELETE FROM drafts WHERE session_id = ? AND turn_id = ?", (session_id, turn_id))
        if self._view_snapshotter is not None:
            try:
                await self._advance_view_snapshots(session_id, first, seq)
            except Exception:
                log.exception("session %s: could not make its view snapshot; its next view reads more", session_id)
        return stored

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
    await conn.execute("PRAGMA busy_timeout = 10000")
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


async def _to_completion(awaitable: Awaitable[Any]) -> Any:
    """Await a transaction-control statement to its end even when the caller is cancelled meanwhile, then
    re-raise the cancellation: a cancel landing mid-``BEGIN``/``COMMIT``/``ROLLBACK`` must never leave the
    writer connection inside a transaction (every later write would fail until a restart)."""
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
