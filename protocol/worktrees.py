"""Worktree sessions (B-WT-1): a session in a git worktree of its own, reviewed and merged or discarded
(``createSession {worktree}``, ``mergeWorktree``, ``discardWorktree``; docs/WORKTREES.md)."""

from __future__ import annotations

from typing import Literal

from protocol.base import Base

MergeStrategy = Literal["merge", "squash", "rebase"]
# "active": the worktree is there; "merged": its branch was merged (the worktree stays); "discarded": it is gone
WorktreeState = Literal["active", "merged", "discarded"]


class WorktreeInfo(Base):
    """A session's worktree: where it is, its branch, what it was made from, and its work against that base now
    (the diff of the worktree's files, committed or not, and the commits not on the base)."""

    path: str
    branch: str  # threadline/NAME
    base: str  # the branch (or commit) it was made from and merges into
    files_changed: int  # always sent, zeros included
    insertions: int
    deletions: int
    ahead: int  # commits on the branch that the base lacks
    state: WorktreeState


class MergeWorktreeParams(Base):
    session_id: str
    strategy: MergeStrategy | None = None  # absent: "merge"


class MergeWorktreeResult(Base):
    """``merged`` false: the merge conflicted and was aborted, the main checkout is as it was, ``conflicts`` names
    the files; true: ``commit`` is the base's new tip (absent when there was nothing to merge)."""

    merged: bool
    conflicts: list[str] | None = None
    commit: str | None = None


class DiscardWorktreeParams(Base):
    session_id: str
    delete_branch: bool | None = None  # also delete the branch (its commits stay only in the reflog)


class DiscardWorktreeResult(Base):
    discarded: bool
