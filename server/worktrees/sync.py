"""Bringing a task's commits into its repository (B-WT-1), outside any sandbox: the objects its confined commands
wrote to the task's own folder are copied in by git itself (``unpack-objects --strict`` names each object by
hashing it, so nothing the task wrote can pose as another object), checked complete, and only then does the
branch ``threadline/NAME`` move to the worktree's HEAD."""

from __future__ import annotations

from server.worktrees import git
from server.worktrees.record import WorktreeRecord
from server.worktrees.stats import head

_HAVE = ("--branches", "--tags", "--remotes")


async def sync(record: WorktreeRecord) -> str | None:
    """Import the worktree's HEAD and all it needs, and point the branch at it; returns that commit (None when
    the worktree is gone: the branch stays as it was)."""
    top = await head(record)
    if top is None:
        return None
    env = record.read_env()
    # Everything the head needs that no branch, tag or remote already has (not --all: that counts worktrees'
    # HEADs, this one's included, whose objects are exactly those still to be brought in)
    listed = await git.check(record.repo, "rev-list", "--objects", top, "--not", *_HAVE, env=env)
    if listed.strip():
        pack = await git.check_bytes(record.repo, "pack-objects", "--stdout", "-q", env=env, stdin=listed.encode())
        await git.check(record.repo, "unpack-objects", "-q", "--strict", stdin=pack)
    # complete without the task's folder (the repository's objects alone)
    await git.check(record.repo, "rev-list", "--objects", "--quiet", top, "--not", *_HAVE)
    await git.check(record.repo, "update-ref", "-m", "threadline: the worktree's work", record.ref, top)
    return top
