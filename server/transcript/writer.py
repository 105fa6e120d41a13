"""The store's one writer connection, owned by one thread: a write transaction is one function run there.

Every statement sent through aiosqlite is its own round trip to its thread, and the event loop waits for each; the
agent loop's ~15 statements per model call spent most of its time so. aiosqlite offers no public way to run a
function in its thread, so writes have their own: ``transaction(fn)`` runs ``BEGIN IMMEDIATE``, ``fn(connection)``
and ``COMMIT`` (``ROLLBACK`` when it raises) in one trip. Writes queue in order on the one thread, so no
``database is locked`` ever surfaces from this process, and a cancelled caller never leaves a transaction open.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

BUSY_TIMEOUT_MS = 10_000  # another process's write transaction is waited for, not reported


def connect(path: Path) -> sqlite3.Connection:
    """A connection as the store uses it: autocommit (transactions are explicit), foreign keys on."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class Writer:
    """One ``sqlite3`` connection and the one thread that uses it. Open with ``await Writer.open(path)``."""

    def __init__(self, pool: ThreadPoolExecutor, conn: sqlite3.Connection):
        self._pool: ThreadPoolExecutor | None = pool
        self._conn = conn

    @classmethod
    async def open(cls, path: Path) -> Writer:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="threadline-store-writer")
        try:
            conn = await asyncio.get_running_loop().run_in_executor(pool, connect, path)
        except BaseException:
            pool.shutdown(wait=False)
            raise
        return cls(pool, conn)

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    async def transaction(self, fn: Callable[[sqlite3.Connection], T], then: Callable[[T], None] | None = None) -> T:
        """``fn(connection)`` in one ``BEGIN IMMEDIATE`` transaction on the writer thread: all of it commits or
        none of it does; ``then(result)`` runs there once it has committed, before the next transaction. A caller
        cancelled meanwhile still waits for the thread to finish (then the cancellation is raised), so what ran
        is always committed or rolled back before anything else happens."""
        if self._pool is None:
            raise sqlite3.ProgrammingError("the store is closed")
        loop = asyncio.get_running_loop()
        result: T = await to_completion(loop.run_in_executor(self._pool, self._run, fn, then))
        return result

    def _run(self, fn: Callable[[sqlite3.Connection], T], then: Callable[[T], None] | None) -> T:
        conn = self._conn
        if conn.in_transaction:  # never start inside a transaction something left open
            conn.execute("ROLLBACK")
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise
        if then is not None:
            then(result)
        return result

    async def close(self) -> None:
        """Close the connection on its thread, then let the thread go (closing twice does nothing)."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        try:
            await asyncio.get_running_loop().run_in_executor(pool, self._conn.close)
        finally:
            pool.shutdown(wait=False)


async def to_completion(awaitable: Awaitable[Any]) -> Any:
    """Await ``awaitable`` to its end even when the caller is cancelled meanwhile, then re-raise the cancellation:
    a cancel landing mid-transaction must never leave the writer connection inside one, nor hide whether the
    transaction committed from the thread that runs the next."""
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
