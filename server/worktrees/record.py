"""What is stored of a session's worktree: one ``worktree`` event per change (made, merged, discarded), the newest
one saying how it is now; and where Threadline keeps worktrees (outside every repository, so they never nest)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.transcript import Store

EVENT = "worktree"
BRANCH_PREFIX = "threadline/"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# GIT_CONFIG_* for a confined command's git: no automatic gc or maintenance (they would write the repository's
# own object folder and lock files, which the sandbox refuses; a refused gc only adds noise)
QUIET_GIT_CONFIG = {"gc.auto": "0", "maintenance.auto": "false"}


def worktrees_root(home: Path) -> Path:
    """Every worktree Threadline makes lives below here, in the data folder: outside every repository."""
    return home / "worktrees"


def task_folder(home: Path, common_dir: Path, name: str) -> Path:
    """The task's own folder: its checkout (``NAME/``) and its object folder (``objects/``) side by side, named
    after the repository (its folder's name and a hash of its git folder's path) and the worktree."""
    digest = hashlib.sha256(str(common_dir).encode()).hexdigest()[:10]
    repo = re.sub(r"[^A-Za-z0-9._-]", "_", common_dir.parent.name)[:40] or "repo"
    return worktrees_root(home) / f"{repo}-{digest}" / name


@dataclass(frozen=True)
class WorktreeRecord:
    """A session's worktree. ``repo``: the main checkout (where merges happen); ``common_dir``: the repository's
    git folder; ``admin``: git's folder for this worktree (``common_dir/worktrees/X``); ``objects``: the task's own
    object folder, the repository's objects its read-only alternates; ``base``: the branch (or commit) it was made
    from, ``base_commit`` that commit; ``home``: the data folder it lives in."""

    name: str
    repo: str
    common_dir: str
    path: str
    admin: str
    objects: str
    base: str
    base_commit: str
    home: str
    state: str = "active"

    @property
    def branch(self) -> str:
        return BRANCH_PREFIX + self.name

    @property
    def ref(self) -> str:
        return "refs/heads/" + self.branch

    @property
    def base_is_branch(self) -> bool:
        return self.base != self.base_commit

    def payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> WorktreeRecord:
        names = cls.__dataclass_fields__
        return cls(**{k: str(v) for k, v in payload.items() if k in names})

    def read_env(self) -> dict[str, str]:
        """For the server's own git in the repository: the task's objects readable, never written there."""
        return {"GIT_ALTERNATE_OBJECT_DIRECTORIES": self.objects}

    def grant(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """B-WT-1, what a confined command of this session may write beyond its folder, as the sandbox takes it
        (``SandboxPolicy.with_git_grant``): the folders that are the task's alone (git's admin folder of this
        worktree, where its HEAD, index and their logs are; the task's object folder), the files in them that
        stay read-only (those that say where the repository and the worktree are, and the worktree's own config),
        the environment that sends new objects to the task's folder, and the data folder to hide around them."""
        admin = Path(self.admin)
        read_only = tuple(str(admin / f) for f in ("commondir", "gitdir", "config.worktree"))
        config = list(QUIET_GIT_CONFIG.items())
        env = (
            f"GIT_OBJECT_DIRECTORY={self.objects}",
            f"GIT_ALTERNATE_OBJECT_DIRECTORIES={Path(self.common_dir) / 'objects'}",
            f"GIT_CONFIG_COUNT={len(config)}",
            *(f"GIT_CONFIG_KEY_{i}={k}" for i, (k, _) in enumerate(config)),
            *(f"GIT_CONFIG_VALUE_{i}={v}" for i, (_, v) in enumerate(config)),
        )
        return (self.admin, self.objects), read_only, env, (self.home,)

    def with_state(self, state: str) -> WorktreeRecord:
        return replace(self, state=state)


async def load(store: Store, session_id: str) -> WorktreeRecord | None:
    """The session's worktree as stored now; None for a session made without one."""
    event = await store.latest_event(session_id, EVENT, "path")
    return WorktreeRecord.from_payload(event.payload) if event is not None else None


async def load_many(store: Store, session_ids: Sequence[str]) -> dict[str, WorktreeRecord]:
    """``load`` for many sessions in one read: the sessions made with a worktree, by id."""
    events = await store.latest_events(session_ids, EVENT, "path")
    return {sid: WorktreeRecord.from_payload(event.payload) for sid, event in events.items()}


async def save(store: Store, session_id: str, record: WorktreeRecord) -> None:
    await store.add_event(session_id, EVENT, record.payload())
