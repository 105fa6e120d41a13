"""What the ``Store`` query mixins need of it: its one write transaction and its read connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar("T")


class Queries:
    """A mixin of ``Store`` (``server.transcript.store``), which supplies these."""

    if TYPE_CHECKING:

        async def _transact(self, fn: Callable[[sqlite3.Connection], T], then: Callable[[T], None] | None = None) -> T:
            """``fn(connection)`` as one ``BEGIN IMMEDIATE`` transaction on the writer's thread (one round trip)."""

        async def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
            """Rows from the reader connection (committed data only)."""
