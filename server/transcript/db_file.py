"""The database file on disk, before SQLite opens it: a new one appears whole and private, and an empty one is
refused rather than silently replaced (R-SRC-1: nothing stored is lost)."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from server.errors import StorageFailure

__all__ = ["create_whole", "refuse_empty_file"]


def refuse_empty_file(path: Path) -> None:
    """A 0-byte file where the database should be was truncated or replaced: SQLite would quietly make it a new,
    empty store and every session would seem gone. Refuse, naming the file, and leave it as it is. (A 0-byte
    file beside a non-empty ``-wal`` is left to SQLite: the log holds the data.)"""
    try:
        if path.stat().st_size != 0:
            return
    except OSError:
        return  # absent (a new store), or unreadable (opening it says why)
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return
    raise StorageFailure(
        f"cannot open the transcript database at {path}: the file is empty (0 bytes), not a "
        "database. It was probably truncated; Threadline will not replace it with an empty store. "
        "Restore it from a backup, or move it aside to start a new one"
    )


def create_whole(path: Path) -> None:
    """A new database appears with its header written, never as the 0-byte file SQLite first creates: a second
    server starting at the same moment would take that for a truncated store (``refuse_empty_file``). It is
    made under a temporary name and linked into place, which fails if another server linked its own first. The
    temporary name is unique (``mkstemp``: two threads of one process, or a name planted in the folder, cannot
    collide with it) and the file is private to the user (0600), as a transcript should be."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # writes the header
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another server made it first: open that one
        except OSError:
            pass  # no hard links here: SQLite creates it in place, as it always did
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)
