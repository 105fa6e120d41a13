"""The worktree use cases (B-WT-1): make a session's worktree, measure it for the wire, merge it into its base,
discard it, and refuse to delete a session whose worktree holds work no branch has merged."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from protocol.worktrees import MergeWorktreeResult, WorktreeInfo, WorktreeState
from server.errors import InvalidParams, UnmergedWork
from server.services.needs import CoreStore
from server.worktrees import record as records
from server.worktrees.create import create_worktree
from server.worktrees.git import GitFailed
from server.worktrees.merge import checkout_lock, merge_worktree
from server.worktrees.record import WorktreeRecord
from server.worktrees.remove import discard_worktree
from server.worktrees.stats import measure
from server.worktrees.sync import sync

log = logging.getLogger(__name__)


async def make(core: CoreStore, cwd: Path, worktree: str | bool, base: str | None) -> tuple[WorktreeRecord, Path]:
    """A new worktree for a session about to be made in ``cwd``; returns it and the session's folder in it."""
    try:
        return await create_worktree(core.settings.home, cwd, worktree, base)
    except GitFailed as exc:
        raise InvalidParams(f"git could not make the worktree: {exc.stderr.strip()[:300]}") from None


async def keep(core: CoreStore, session_id: str, record: WorktreeRecord) -> None:
    await records.save(core.store, session_id, record)


async def forget_made(record: WorktreeRecord) -> None:
    """The session could not be made after its worktree was: the worktree and its branch go again."""
    await discard_worktree(record, delete_branch=True)


async def info(record: WorktreeRecord) -> WorktreeInfo:
    """The wire's ``worktree``: where, which branch and base, and the work against the base now."""
    try:
        work = await measure(record)
    except (GitFailed, OSError) as exc:  # a repository moved or broken since: the rest is still worth showing
        log.warning("measuring worktree %s failed: %s", record.path, exc)
        work = None
    return WorktreeInfo(
        path=record.path,
        branch=record.branch,
        base=record.base,
        files_changed=work.files_changed if work else 0,
        insertions=work.insertions if work else 0,
        deletions=work.deletions if work else 0,
        ahead=work.ahead if work else 0,
        state=cast(WorktreeState, record.state),
    )


async def sessions_info(core: CoreStore, session_ids: Sequence[str]) -> dict[str, WorktreeInfo]:
    """The wire's ``worktree`` of every listed session: one store read for all, git only for the worktree ones."""
    found = await records.load_many(core.store, session_ids)
    measured = await asyncio.gather(*(info(record) for record in found.values()))
    return dict(zip(found, measured, strict=True))


async def _record(core: CoreStore, session_id: str) -> WorktreeRecord:
    await core.store.get_session(session_id)  # SessionNotFound first
    found = await records.load(core.store, session_id)
    if found is None:
        raise InvalidParams(f"session {session_id} has no worktree")
    return found


async def merge(core: CoreStore, session_id: str, strategy: str | None) -> MergeWorktreeResult:
    found = await _record(core, session_id)
    try:
        done = await merge_worktree(found, strategy or "merge")
    except GitFailed as exc:
        # git itself refused (a hook, the repository's state): said in one line, with git's reason
        raise InvalidParams(
            f"git failed while merging {found.branch}: {exc.stderr.strip()[:300]}", "GitFailed"
        ) from None
    if done.merged and found.state == "active":
        await records.save(core.store, session_id, found.with_state("merged"))
    return MergeWorktreeResult(merged=done.merged, conflicts=list(done.conflicts) or None, commit=done.commit)


async def discard(core: CoreStore, session_id: str, delete_branch: bool) -> bool:
    """Remove the worktree (the session stays, readable); False when it was discarded already."""
    found = await _record(core, session_id)
    if found.state == "discarded":
        return False
    handle = core.sessions.peek(session_id)
    if handle is not None:
        await handle.processes.stop_all()  # nothing of the task's keeps running in a folder that is gone
    async with checkout_lock(found.repo):
        await discard_worktree(found, delete_branch)
    await records.save(core.store, session_id, found.with_state("discarded"))
    return True


async def before_delete(core: CoreStore, session_id: str, force: bool) -> WorktreeRecord | None:
    """The session's worktree, checked before the session is deleted: ``UnmergedWork`` when it holds commits or
    changes its base has not merged, unless ``force``."""
    found = await records.load(core.store, session_id)
    if found is None or found.state == "discarded":
        return None
    if not force:
        work = await measure(found)
        if work.unmerged:
            what = f"{work.ahead} commit(s)" if work.ahead else "uncommitted changes"
            raise UnmergedWork(
                f"the worktree {found.path} holds {what} not merged into {found.base}; merge or discard it, "
                "or delete with force"
            )
    return found


async def after_delete(found: WorktreeRecord) -> None:
    """The deleted session's worktree goes with it, and its branch (merged, or the delete was forced)."""
    async with checkout_lock(found.repo):
        await discard_worktree(found, delete_branch=True)


async def of_session(core: CoreStore, session_id: str) -> WorktreeRecord | None:
    """The session's worktree, read as its turn starts (``after_turn`` then needs no read of its own)."""
    return await records.load(core.store, session_id)


async def after_turn(found: WorktreeRecord | None) -> None:
    """B-WT-1: a turn's commits, made in the task's object folder, brought into the repository and onto its
    branch, so git outside the sandbox (the user's, an editor's) sees them. Never fails the turn. A session
    without a worktree awaits nothing here: its client may start the next turn as soon as this one says it
    ended."""
    if found is None or found.state == "discarded":
        return
    try:
        await sync(found)
    except (GitFailed, OSError) as exc:
        log.warning("bringing in the commits of worktree %s failed: %s", found.path, exc)
