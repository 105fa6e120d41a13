"""Making a session's worktree (B-WT-1): a new branch ``threadline/NAME`` from HEAD (or ``base``), checked out
detached in the task's own folder under the data folder, with the task's own object folder beside it, and the
files ``.worktreeinclude`` names copied in."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import secrets
import shutil
from pathlib import Path

from server.errors import InvalidParams, NotAGitRepository, WorktreeExists
from server.worktrees import git
from server.worktrees.record import NAME, WorktreeRecord, task_folder

INCLUDE_FILE = ".worktreeinclude"
MAX_INCLUDED_FILES = 10_000


async def find_repository(cwd: Path) -> tuple[Path, Path, Path]:
    """``(toplevel, main checkout, git common folder)`` of the repository holding ``cwd``; ``NotAGitRepository``
    when there is none (or it is bare: it has no checkout to merge into)."""
    done = await git.run(cwd, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
    lines = done.out.splitlines()
    if done.code != 0 or len(lines) != 2:
        raise NotAGitRepository(f"{cwd} is not in a git repository (with a checkout): a worktree needs one")
    top, common = Path(lines[0]).resolve(), Path(lines[1]).resolve()
    listed = await git.check(top, "worktree", "list", "--porcelain")
    first = next((line[len("worktree ") :] for line in listed.splitlines() if line.startswith("worktree ")), "")
    main = Path(first).resolve() if first else top
    if "bare" in listed.split("\n\n", 1)[0].splitlines():
        raise NotAGitRepository(f"{cwd} belongs to a bare repository: there is no checkout to merge into")
    return top, main, common


def checked_name(worktree: str | bool) -> str:
    if worktree is True:
        return f"task-{secrets.token_hex(3)}"
    if not isinstance(worktree, str) or not NAME.fullmatch(worktree) or worktree.endswith((".lock", ".")):
        raise InvalidParams(
            "worktree must be true or a name of letters, digits, '.', '_' and '-' (at most 64, not starting with"
            " '.' or '-')"
        )
    if ".." in worktree:
        raise InvalidParams("worktree must not contain '..'")
    return worktree


async def base_of(top: Path, base: str | None) -> tuple[str, str]:
    """``(label, commit)``: the branch the worktree starts from (its short name) or, for a tag or commit, the
    commit itself; ``base`` absent: the checkout's HEAD."""
    if base is not None and (not base or base.startswith("-") or "\x00" in base):
        raise InvalidParams("base must name a branch, tag or commit")
    rev = base or "HEAD"
    commit = await git.run(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if commit.code != 0:
        raise InvalidParams(f"base {rev!r} names no commit in this repository")
    full = await git.run(top, "rev-parse", "--symbolic-full-name", rev)
    name = full.out.strip()
    label = name[len("refs/heads/") :] if name.startswith("refs/heads/") else commit.out.strip()
    return label, commit.out.strip()


async def create_worktree(home: Path, cwd: Path, worktree: str | bool, base: str | None) -> tuple[WorktreeRecord, Path]:
    """Make the worktree; returns it and the session's folder in it (``cwd``'s place in the new checkout)."""
    name = checked_name(worktree)
    top, main, common = await find_repository(cwd)
    label, commit = await base_of(top, base)
    folder = task_folder(home, common, name)
    record = WorktreeRecord(
        name=name,
        repo=str(main),
        common_dir=str(common),
        path=str(folder / name),
        admin="",
        objects=str(folder / "objects"),
        base=label,
        base_commit=commit,
        home=str(home.resolve()),
    )
    if (await git.run(main, "show-ref", "--verify", "--quiet", record.ref)).code == 0 or folder.exists():
        raise WorktreeExists(f"a worktree named {name!r} exists in {main} (branch {record.branch})")
    if (await git.run(main, "check-ref-format", "--branch", record.branch)).code != 0:
        raise InvalidParams(f"{record.branch!r} is not a usable branch name")
    folder.mkdir(parents=True)
    try:
        for sub in ("info", "pack"):
            (folder / "objects" / sub).mkdir(parents=True)
        await git.check(main, "branch", "--no-track", record.branch, commit)
        await git.check(main, "worktree", "add", "--detach", "--quiet", record.path, commit)
    except BaseException:
        await git.run(main, "branch", "-D", record.branch)
        shutil.rmtree(folder, ignore_errors=True)
        await git.run(main, "worktree", "prune")
        raise
    admin = _admin_folder(Path(record.path), common)
    record = WorktreeRecord(**{**record.payload(), "admin": admin or ""})
    if admin is not None:
        # present, so the sandbox can hold it read-only: git reads it once extensions.worktreeConfig is on
        Path(admin, "config.worktree").touch()
    copy_included(main, Path(record.path))
    inside = os.path.relpath(cwd, top)
    if inside == ".":
        return record, Path(record.path)
    folder = Path(record.path) / inside
    folder.mkdir(parents=True, exist_ok=True)  # a folder git does not track (empty, or only ignored files)
    return record, folder


def copy_included(main: Path, dest: Path) -> int:
    """Copy what ``.worktreeinclude`` (one path or glob a line, ``#`` comments) names in the main checkout into the
    new one: files the checkout lacks (ignored ones, such as ``.env``); never over a file, never a link, never
    out of the repository or into a git folder. Returns how many were copied."""
    try:
        lines = (main / INCLUDE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 0
    patterns = [p.strip().strip("/") for p in lines if p.strip() and not p.lstrip().startswith("#")]
    copied = 0
    for source in _included(main, patterns):
        target = dest / source.relative_to(main)
        if target.exists() or target.is_symlink():
            continue
        with contextlib.suppress(OSError):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
            copied += 1
    return copied


def _included(main: Path, patterns: list[str]) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(main):
        dirs[:] = [d for d in dirs if d.casefold() != ".git" and not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = Path(root, name)
            rel = path.relative_to(main).as_posix()
            if path.is_symlink() or not any(_matches(rel, p) for p in patterns):
                continue
            found.append(path)
            if len(found) >= MAX_INCLUDED_FILES:
                return found
    return found


def _matches(rel: str, pattern: str) -> bool:
    """A pattern names a file, a folder (everything in it) or a glob; without a ``/`` it matches at any depth."""
    if fnmatch.fnmatchcase(rel, pattern) or rel.startswith(pattern.rstrip("/") + "/"):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], pattern)


def _admin_folder(checkout: Path, common: Path) -> str | None:
    """git's folder for the new worktree, as its ``.git`` file names it (checked to be in ``common/worktrees``)."""
    try:
        line = (checkout / ".git").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    admin = Path(line[len("gitdir:") :].strip()).resolve() if line.startswith("gitdir:") else None
    return str(admin) if admin is not None and admin.parent == common / "worktrees" else None
