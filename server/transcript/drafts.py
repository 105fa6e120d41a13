"""Who owns a draft: one lease file per running server, held with ``flock`` for the process's lifetime.

A streaming answer's text so far is kept as a draft (see ``Store.save_draft``) so that a server killed mid-stream
loses at most the last fraction of a second of it. At start-up a server turns the drafts of *dead* servers into
``interrupted`` messages. Several servers may share one data folder (an editor's and the CLI's), so "dead" must be
certain: the kernel drops a process's ``flock`` when it dies, however it dies, so a lease that can be locked
belongs to nobody.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from server.private_files import private_folder
from server.transcript.queries import Queries
from server.transcript.records import NewMessage, StoredMessage, now

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows; drafts are then recovered only from this process
    fcntl = None  # type: ignore[assignment]


class Lease:
    """This process's lease in ``folder``; ``id`` is what its drafts record as their owner."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.id = uuid.uuid4().hex
        private_folder(folder)
        self._fd: int | None = os.open(folder / f"{self.id}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def release(self) -> None:
        if self._fd is None:
            return
        os.close(self._fd)
        self._fd = None
        (self.folder / f"{self.id}.lock").unlink(missing_ok=True)

    def owner_alive(self, owner: str) -> bool:
        """True while the server that wrote ``owner``'s drafts still runs (always True for ourselves)."""
        if owner == self.id:
            return True
        if fcntl is None:
            return True
        path = self.folder / f"{owner}.lock"
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        path.unlink(missing_ok=True)  # its owner is gone; tidy up
        return False


class DraftQueries(Queries):
    """``Store`` methods for ``drafts``: the text so far of a streaming answer (not a message)."""

    owner: str  # who this process's drafts belong to (a ``Lease`` id)

    if TYPE_CHECKING:  # the store's own

        async def append_messages(
            self, session_id: str, messages: Sequence[NewMessage], turn_id: str | None = None
        ) -> list[StoredMessage]: ...

    async def save_draft(self, session_id: str, turn_id: str, content: str, reasoning: str | None) -> None:
        """Replace the turn's draft; ``append_messages`` of the answer removes it."""
        await self._transact(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO drafts (session_id, turn_id, owner, content, reasoning, updated_at)"
                " VALUES (?,?,?,?,?,?)",
                (session_id, turn_id, self.owner, content, reasoning, now()),
            )
        )

    async def discard_draft(self, session_id: str, turn_id: str) -> None:
        """Forget the turn's draft without appending it (an answer that must not be kept)."""
        await self._transact(
            lambda db: db.execute("DELETE FROM drafts WHERE session_id = ? AND turn_id = ?", (session_id, turn_id))
        )

    async def recover_drafts(self, owner_alive: Callable[[str], bool]) -> list[StoredMessage]:
        """Each draft of a dead owner becomes an ``interrupted`` assistant message, appended with the draft's
        removal in one transaction. Returns the messages appended."""
        rows = await self._read("SELECT session_id, turn_id, owner, content, reasoning FROM drafts ORDER BY rowid")
        recovered: list[StoredMessage] = []
        for session_id, turn_id, owner, content, reasoning in rows:
            if owner_alive(owner):
                continue
            msg = NewMessage("assistant", content, reasoning=reasoning or None, status="interrupted")
            recovered.extend(await self.append_messages(session_id, [msg], turn_id))
        return recovered
