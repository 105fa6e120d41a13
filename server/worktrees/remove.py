"""Discarding a worktree (B-WT-1): its checkout, git's entry for it and the task's object folder go; its branch
stays (holding the task's commits) unless asked to go too."""

from __future__ import annotations

import shutil
from pathlib import Path

from server.worktrees import git
from server.worktrees.record import WorktreeRecord, worktrees_root
from server.worktrees.sync import sync


async def discard_worktree(record: WorktreeRecord, delete_branch: bool) -> None:
    if not delete_branch:
        await sync(record)  # the branch keeps every commit the task made, its own objects included
    folder = Path(record.path).parent
    # Only what is ours: the task folder under the data folder, and git's entry for it in this repository
    if _inside(folder, worktrees_root(Path(record.home))):
        shutil.rmtree(folder, ignore_errors=True)
    admin = Path(record.admin)
    if record.admin and admin.parent == Path(record.common_dir) / "worktrees" and not admin.is_symlink():
        shutil.rmtree(admin, ignore_errors=True)
    await git.run(record.repo, "worktree", "prune")
    if delete_branch:
        await git.run(record.repo, "update-ref", "-d", record.ref)


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve()) and path.resolve() != root.resolve()
    except OSError:
        return False
