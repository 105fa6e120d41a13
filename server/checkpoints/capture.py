"""Before a tool writes a file: keep what is there (or that nothing is); after: note what the write left.

Keyed by session, turn and tool call. A content over the per-file cap, or one that would take the session's kept
contents over its cap, is recorded as not restorable, and the tool result says so.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.checkpoints.blobs import Blobs, digest, digest_inside, file_digest
from server.project.workspace import (
    NotRegularFile,
    Opened,
    OutsideWorkspace,
    open_inside,
    read_regular_at,
    resolve_inside,
)
from server.tools import Tool
from server.transcript import Store


@dataclass(frozen=True)
class Pending:
    id: int
    rel: str  # below the session folder, links resolved
    note: str | None


@dataclass
class Checkpointer:
    store: Store
    blobs: Blobs
    session_id: str
    turn_id: str
    cwd: Path
    max_file_bytes: int
    max_session_bytes: int

    async def before(self, call_id: str, tool: Tool, args: dict[str, Any]) -> list[Pending]:
        pending = []
        for key in tool.writes_paths:
            raw = args.get(key)
            if isinstance(raw, str) and (p := await self._keep(call_id, raw)) is not None:
                pending.append(p)
        return pending

    async def after(self, pending: list[Pending], wrote: bool) -> list[str]:
        """Record what each write left; a call that failed wrote nothing, so its rows go. Returns the notes for
        the tool result (contents that cannot be restored)."""
        for p in pending:
            if wrote:
                await self.store.finish_checkpoint(p.id, await asyncio.to_thread(digest_inside, self.cwd, p.rel))
            else:
                await self.store.drop_checkpoint(p.id)
        return [p.note for p in pending if wrote and p.note]

    async def _keep(self, call_id: str, raw: str) -> Pending | None:
        """Walked as the tool will walk it (``open_inside``, a write's refusals included) and read through that
        walk, so what is kept is what the write will replace."""
        try:
            opened = await asyncio.to_thread(open_inside, self.cwd, raw, writing=True, make_dirs=False)
        except FileNotFoundError:  # a folder on the way is missing: the write makes it, and the file
            try:
                rel = resolve_inside(self.cwd, raw).relative_to(self.cwd.resolve()).as_posix()
            except OutsideWorkspace:
                return None
            return await self._record(call_id, rel, "created", before_hash=None, size=0, note=None)
        except (OutsideWorkspace, OSError):
            return None  # outside, into a git folder, hidden or unwalkable: the tool refuses it, nothing is written
        try:
            return await self._keep_opened(call_id, opened)
        finally:
            opened.close()

    async def _keep_opened(self, call_id: str, opened: Opened) -> Pending | None:
        path = opened.path
        rel = path.relative_to(os.path.realpath(self.cwd)).as_posix()
        try:
            data, size = await asyncio.to_thread(read_regular_at, opened, self.max_file_bytes + 1)
        except FileNotFoundError:
            return await self._record(call_id, rel, "created", before_hash=None, size=0, note=None)
        except (NotRegularFile, OSError):
            return None  # a folder, FIFO or unreadable file: the tool fails on it
        note = None
        if size > self.max_file_bytes:
            note = (
                f"[checkpoint: {rel} was {size} bytes, over the {self.max_file_bytes}-byte checkpoint cap per "
                "file; this change is recorded but rewindFiles cannot restore it]"
            )
            key = await asyncio.to_thread(file_digest, str(opened.name), opened.dir_fd)
        else:
            key = digest(data)
            used = await self.store.checkpoint_bytes(self.session_id)
            kept = await asyncio.to_thread(self.blobs.has, self.session_id, key)  # a known content costs nothing
            if not kept and used + size > self.max_session_bytes:
                note = (
                    f"[checkpoint: keeping {rel} ({size} bytes) would take this session's checkpoints over "
                    f"their {self.max_session_bytes}-byte cap; this change is recorded but rewindFiles cannot "
                    "restore it]"
                )
            else:
                await asyncio.to_thread(self.blobs.put, self.session_id, data)
        return await self._record(call_id, rel, "modified", before_hash=key, size=size, note=note)

    async def _record(
        self, call_id: str, rel: str, change: str, *, before_hash: str | None, size: int, note: str | None
    ) -> Pending:
        """The tool call's row for ``path``, open until ``after``; a note means its content was not kept."""
        row = await self.store.add_checkpoint(
            self.session_id,
            kind="tool",
            turn_id=self.turn_id,
            tool_call_id=call_id,
            path=rel,
            change=change,
            before_hash=before_hash,
            size=size,
            restorable=note is None,
            note=note,
        )
        return Pending(row, rel, note)
