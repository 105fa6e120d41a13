"""What the ``Store`` query mixins need of it: its one write transaction and its read connection."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiosqlite


class Queries:
    """A mixin of ``Store`` (``server.transcript.store``), which supplies these."""

    if TYPE_CHECKING:

        def _write(self) -> AbstractAsyncContextManager[aiosqlite.Connection]:
            """One ``BEGIN IMMEDIATE`` transaction on the writer connection."""

        async def _write_one(self, sql: str, args: Sequence[Any]) -> aiosqlite.Cursor:
            """One statement on the writer connection, atomic by itself."""

        async def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
            """Rows from the reader connection (committed data only)."""
