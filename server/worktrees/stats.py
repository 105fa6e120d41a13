"""A worktree's work against its base (B-WT-1), measured without writing anything: its head, the diff of its files
(committed or not, new files included) and the commits its base lacks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from server.worktrees import git
from server.worktrees.record import WorktreeRecord

SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
MAX_COUNTED_BYTES = 1 << 20  # a new file's lines are counted up to this size
_SHORTSTAT = re.compile(r"(\d+) (file|insertion|deletion)")


@dataclass(frozen=True)
class Work:
    files_changed: int = 0
    insertions: int = 0
    deletions: int = 0
    ahead: int = 0
    dirty: bool = False  # the worktree has changes no commit holds

    @property
    def unmerged(self) -> bool:
        return self.ahead > 0 or self.dirty


async def head(record: WorktreeRecord) -> str | None:
    """The worktree's HEAD commit, read from its admin folder (what a confined commit moves; the task's own),
    checked to be a commit; None when the worktree is gone."""
    try:
        text = Path(record.admin, "HEAD").read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    rev = text if SHA.fullmatch(text) else text[len("ref: ") :] if text.startswith("ref: refs/") else None
    if rev is None:
        return None
    done = await git.run(record.repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", env=record.read_env())
    return done.out.strip() if done.code == 0 else None


async def base_tip(record: WorktreeRecord) -> str:
    """The base's commit now: the branch's tip (it may have moved on), or the commit the worktree was made from."""
    if record.base_is_branch:
        done = await git.run(record.repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{record.base}^{{commit}}")
        if done.code == 0:
            return done.out.strip()
    return record.base_commit


async def measure(record: WorktreeRecord) -> Work:
    """The worktree's work now; once discarded, its branch's (if it is kept) against the base."""
    tip = await base_tip(record)
    top = await head(record) if Path(record.path).is_dir() else None
    env = record.read_env()
    if top is None:
        branch = await git.run(record.repo, "rev-parse", "--verify", "--quiet", f"{record.ref}^{{commit}}")
        if branch.code != 0:
            return Work()
        top = branch.out.strip()
        return await _committed(record, tip, top)
    ahead = await _count(record, tip, top)
    since = await git.run(record.repo, "merge-base", tip, top, env=env)
    start = since.out.strip() if since.code == 0 else record.base_commit
    diff = await git.run(record.path, "diff", "--shortstat", start, "--", env=env)
    status = await git.run(record.path, "status", "--porcelain", "-z", "--untracked-files=all", env=env)
    new = [e[3:] for e in status.out.split("\0") if e.startswith("?? ")]
    files, ins, dels = _shortstat(diff.out)
    ins += sum(_lines(Path(record.path, n)) for n in new)
    return Work(files + len(new), ins, dels, ahead, dirty=bool(status.out.strip("\0")))


async def _committed(record: WorktreeRecord, tip: str, top: str) -> Work:
    env = record.read_env()
    diff = await git.run(record.repo, "diff", "--shortstat", f"{tip}...{top}", "--", env=env)
    files, ins, dels = _shortstat(diff.out)
    return Work(files, ins, dels, await _count(record, tip, top))


async def _count(record: WorktreeRecord, tip: str, top: str) -> int:
    done = await git.run(record.repo, "rev-list", "--count", f"{tip}..{top}", env=record.read_env())
    return int(done.out.strip()) if done.code == 0 and done.out.strip().isdigit() else 0


def _shortstat(text: str) -> tuple[int, int, int]:
    found = {kind: int(n) for n, kind in _SHORTSTAT.findall(text)}
    return found.get("file", 0), found.get("insertion", 0), found.get("deletion", 0)


def _lines(path: Path) -> int:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_COUNTED_BYTES:
            return 0
        data = path.read_bytes()
    except OSError:
        return 0
    if b"\0" in data:
        return 0
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
