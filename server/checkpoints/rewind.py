"""``listCheckpoints`` and ``rewindFiles``: every file changed from a turn (or one call) on, put back as it was.

For each path, the state to restore is what its first write in the range found; the state Threadline last left it
in is the newest row for that path (a tool write or an earlier rewind). A file that matches neither was changed
outside Threadline since: it is reported ``conflicted`` and left alone unless ``force``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from protocol.messages import (
    CheckpointFile,
    ListCheckpointsResult,
    RewindFilesResult,
    RewoundFile,
    TurnCheckpoints,
)
from server.checkpoints.blobs import Blobs, digest_inside
from server.errors import TurnNotFound
from server.project.workspace import OutsideWorkspace, open_inside
from server.tools.base import ToolDenied
from server.tools.files import remove_inside, write_atomic
from server.transcript import Store
from server.transcript.checkpoints import CheckpointRow

RUN_COMMAND_NOTE = "Changes made by run_command are not recorded and cannot be rewound."
NOTHING_NOTE = (
    "No file changes were recorded from this point on (sessions from before checkpoints have none): nothing to restore."
)


async def list_turn_checkpoints(store: Store, session_id: str) -> ListCheckpointsResult:
    await store.get_session(session_id)
    rows = [r for r in await store.list_checkpoints(session_id) if r.kind == "tool" and r.done]
    by_turn: dict[str, list[CheckpointFile]] = {}
    for r in rows:
        by_turn.setdefault(r.turn_id or "", []).append(
            CheckpointFile(
                path=r.path,
                change="created" if r.change == "created" else "modified",
                restorable=r.restorable,
                tool_call_id=r.tool_call_id or "",
                note=r.note,
            )
        )
    turns = [
        TurnCheckpoints(turn_id=t.turn_id, seq=t.seq, created_at=t.created_at, files=by_turn.get(t.turn_id, []))
        for t in await store.turn_starts(session_id)
    ]
    return ListCheckpointsResult(turns=turns, note=RUN_COMMAND_NOTE)


async def rewind_files(
    store: Store,
    blobs: Blobs,
    session_id: str,
    to_turn_id: str,
    tool_call_id: str | None,
    *,
    dry_run: bool,
    force: bool,
) -> RewindFilesResult:
    session = await store.get_session(session_id)
    if to_turn_id not in {t.turn_id for t in await store.turn_starts(session_id)}:
        raise TurnNotFound(f"no turn {to_turn_id!r} in session {session_id!r}")
    rows = await store.list_checkpoints(session_id)
    start = _start(rows, to_turn_id, tool_call_id)
    if start is None:
        return RewindFilesResult(files=[], dry_run=dry_run, note=f"{NOTHING_NOTE} {RUN_COMMAND_NOTE}")
    cwd = Path(session.cwd)
    files = [
        await _one(store, blobs, session_id, cwd, first, last, dry_run, force) for first, last in _paths(rows, start)
    ]
    if not dry_run:
        await store.add_event(
            session_id,
            "filesRewound",
            {
                "toTurnId": to_turn_id,
                **({"toolCallId": tool_call_id} if tool_call_id else {}),
                "force": force,
                "files": [{"path": f.path, "status": f.status} for f in files],
            },
        )
    return RewindFilesResult(files=files, dry_run=dry_run, note=RUN_COMMAND_NOTE)


def _walkable(cwd: Path, rel: str) -> None:
    """Raises ``OutsideWorkspace`` when ``rel`` leads out of ``cwd`` or into a git folder (nothing is written)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        open_inside(cwd, rel, writing=True, make_dirs=False).close()


def _start(rows: Sequence[CheckpointRow], turn_id: str, call_id: str | None) -> int | None:
    for i, r in enumerate(rows):
        if r.kind == "tool" and r.turn_id == turn_id and (call_id is None or r.tool_call_id == call_id):
            return i
    return None


def _paths(rows: Sequence[CheckpointRow], start: int) -> list[tuple[CheckpointRow, CheckpointRow]]:
    """Per path written from ``start`` on: (its first tool write in the range, the newest row for it at all)."""
    first: dict[str, CheckpointRow] = {}
    for r in rows[start:]:
        if r.kind == "tool":
            first.setdefault(r.path, r)
    last = {r.path: r for r in rows if r.path in first}
    return [(row, last[path]) for path, row in first.items()]


async def _one(
    store: Store,
    blobs: Blobs,
    session_id: str,
    cwd: Path,
    first: CheckpointRow,
    last: CheckpointRow,
    dry_run: bool,
    force: bool,
) -> RewoundFile:
    try:  # walked as the tools walk, and written through that walk (write_atomic, remove_inside)
        await asyncio.to_thread(_walkable, cwd, first.path)
    except OutsideWorkspace as exc:  # a folder on the way became a link out, or into a git folder
        return RewoundFile(path=first.path, status="conflicted", detail=str(exc))
    current = await asyncio.to_thread(digest_inside, cwd, first.path)
    if current == first.before_hash:
        return RewoundFile(path=first.path, status="unchanged")
    if not first.restorable:
        return RewoundFile(path=first.path, status="notRestorable", detail=first.note)
    data = None if first.before_hash is None else await asyncio.to_thread(blobs.get, session_id, first.before_hash)
    if first.before_hash is not None and data is None:
        return RewoundFile(path=first.path, status="notRestorable", detail="the kept content is missing or damaged")
    # Ours when it is as Threadline last left it; a missing file is recreated (nothing is overwritten).
    ours = (last.done and current == last.after_hash) or (current is None and data is not None)
    if not ours and not force:
        why = (
            "the last write to it was interrupted, so its content is unknown"
            if not last.done
            else "it was changed outside Threadline since"
        )
        return RewoundFile(path=first.path, status="conflicted", detail=f"{why}; pass force to overwrite it")
    change: Literal["removed", "restored"] = "removed" if data is None else "restored"
    if not dry_run:
        try:
            if data is None:
                await asyncio.to_thread(remove_inside, cwd, first.path)
            else:
                await asyncio.to_thread(write_atomic, cwd, first.path, data)
        except (ToolDenied, OSError) as exc:
            return RewoundFile(path=first.path, status="conflicted", detail=f"could not write it: {exc}")
        await store.add_checkpoint(
            session_id,
            kind="rewind",
            turn_id=None,
            tool_call_id=None,
            path=first.path,
            change=change,
            before_hash=current,
            size=0,
            restorable=False,
            after_hash=first.before_hash,
            done=True,
        )
    return RewoundFile(path=first.path, status="restored", change=change)
