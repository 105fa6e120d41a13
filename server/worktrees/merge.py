"""Merging a worktree's branch into its base in the main checkout (B-WT-1): only into a clean checkout that is on
the base and in the middle of nothing; a conflict is aborted, so the checkout is left exactly as it was (same
HEAD, same index, same files) and the answer names the conflicting files."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from server.errors import CheckoutNotClean, InvalidParams
from server.worktrees import git
from server.worktrees.record import WorktreeRecord
from server.worktrees.stats import measure
from server.worktrees.sync import sync

# What a checkout in the middle of an operation has in its git folder
IN_PROGRESS = (
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "rebase-merge",
    "rebase-apply",
    "BISECT_LOG",
)
_LOCKS: dict[str, asyncio.Lock] = {}  # one merge at a time per main checkout, whichever session asks


@dataclass(frozen=True)
class Merged:
    merged: bool
    conflicts: tuple[str, ...] = ()
    commit: str | None = None


def checkout_lock(repo: str) -> asyncio.Lock:
    return _LOCKS.setdefault(repo, asyncio.Lock())


async def merge_worktree(record: WorktreeRecord, strategy: str) -> Merged:
    """Commit what the worktree left uncommitted, bring its commits in, and merge them as ``strategy`` says."""
    if record.state == "discarded":
        raise InvalidParams(f"the worktree {record.name!r} was discarded: there is nothing to merge")
    async with checkout_lock(record.repo):
        await check_checkout(record)
        await commit_leftovers(record)
        await sync(record)
        if (await measure(record)).ahead == 0:
            return Merged(True, commit=await _head(record.repo))
        if strategy == "rebase":
            return await _rebase(record)
        return await _merge(record, squash=strategy == "squash")


async def check_checkout(record: WorktreeRecord) -> None:
    """``CheckoutNotClean`` unless the main checkout is on the base, has no changes to tracked files and is in
    the middle of nothing."""
    repo = record.repo
    git_dir = Path((await git.check(repo, "rev-parse", "--absolute-git-dir")).strip())
    busy = [name for name in IN_PROGRESS if (git_dir / name).exists()]
    if busy:
        raise CheckoutNotClean(
            f"the main checkout {repo} is in the middle of an operation ({busy[0]}); finish it first"
        )
    changed = await git.check(repo, "status", "--porcelain", "--untracked-files=no")
    if changed.strip():
        raise CheckoutNotClean(f"the main checkout {repo} has uncommitted changes; commit or stash them first")
    if record.base_is_branch:
        on = (await git.run(repo, "symbolic-ref", "--quiet", "--short", "HEAD")).out.strip()
        if on != record.base:
            raise CheckoutNotClean(
                f"the main checkout {repo} is on {on or 'a detached HEAD'}, not {record.base}: check it out first"
            )


async def commit_leftovers(record: WorktreeRecord) -> None:
    """What the task changed without committing it, committed on the worktree (so a merge brings all of it)."""
    if record.state == "discarded" or not Path(record.path).is_dir():
        return
    env = record.read_env() | await _identity(record.repo)
    status = await git.check(record.path, "status", "--porcelain", "--untracked-files=all", env=env)
    if not status.strip():
        return
    await git.check(record.path, "add", "--all", env=env)
    message = f"threadline: work left uncommitted in {record.branch}"
    await git.check(record.path, "commit", "--quiet", "--no-verify", "-m", message, env=env)


async def _merge(record: WorktreeRecord, squash: bool) -> Merged:
    repo, before = record.repo, await _head(record.repo)
    env = await _identity(repo)
    args = ["merge", "--squash"] if squash else ["merge", "--no-edit", "-m", f"Merge {record.branch}"]
    done = await git.run(repo, *args, record.branch, env=env)
    if done.code != 0:
        return await _abort(record, before, done.err or done.out)
    if squash:
        staged = await git.run(repo, "diff", "--cached", "--quiet")
        if staged.code != 0:
            await git.check(repo, "commit", "--quiet", "--no-verify", "-m", f"{record.branch} (squashed)", env=env)
    return Merged(True, commit=await _head(repo))


async def _rebase(record: WorktreeRecord) -> Merged:
    """The branch replayed onto the base in the worktree (a conflict aborts it there), then the base fast-forwarded:
    the main checkout is touched only by the fast-forward."""
    env = record.read_env() | await _identity(record.repo)
    tip = (await git.check(record.repo, "rev-parse", "HEAD")).strip()
    done = await git.run(record.path, "rebase", "--quiet", "--no-autostash", tip, env=env)
    if done.code != 0:
        conflicts = await _conflicts(record.path)
        await git.run(record.path, "rebase", "--abort", env=env)
        return Merged(False, conflicts=conflicts)
    await sync(record)
    before = await _head(record.repo)
    ff = await git.run(record.repo, "merge", "--ff-only", "--quiet", record.branch)
    if ff.code != 0:
        return await _abort(record, before, ff.err)
    return Merged(True, commit=await _head(record.repo))


async def _abort(record: WorktreeRecord, before: str, why: str) -> Merged:
    """Put the main checkout back exactly as it was: the merge aborted, HEAD where it was, no staged leftovers."""
    repo = record.repo
    conflicts = await _conflicts(repo)
    if (Path((await git.check(repo, "rev-parse", "--absolute-git-dir")).strip()) / "MERGE_HEAD").exists():
        await git.run(repo, "merge", "--abort")
    if await _head(repo) != before or (await git.run(repo, "diff", "--cached", "--quiet")).code != 0:
        await git.check(repo, "reset", "--quiet", "--merge", before)
    if not conflicts:
        # refused before it started (an untracked file it would overwrite, ...): nothing changed, say why
        raise CheckoutNotClean(f"git refused the merge into {repo}: {why.strip()[:300]}")
    return Merged(False, conflicts=conflicts)


async def _conflicts(cwd: str) -> tuple[str, ...]:
    done = await git.run(cwd, "diff", "--name-only", "--diff-filter=U", "-z")
    return tuple(sorted(p for p in done.out.split("\0") if p))


async def _head(repo: str) -> str:
    return (await git.check(repo, "rev-parse", "HEAD")).strip()


async def _identity(repo: str) -> dict[str, str]:
    """The user's name on the server's commits; Threadline's only where git knows no one (so a commit never fails)."""
    email = await git.run(repo, "config", "user.email")
    return {} if email.code == 0 and email.out.strip() else dict(git.IDENTITY)
