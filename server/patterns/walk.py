"""Walking the session folder the way git would: ``.gitignore`` files respected, ``.git`` skipped."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pathspec

from server.sandbox.policy import is_hidden

ALWAYS_SKIPPED = {".git", ".hg", ".svn", ".threadline-tmp"}


def walk_files(root: Path, base: Path, hidden: tuple[str, ...] = ()) -> Iterator[Path]:
    """Files under ``base`` (inside ``root``) not ignored by any ``.gitignore`` from ``root`` down.

    Symlinked directories are not followed, so a link pointing outside the folder is never walked into. Only
    regular files are yielded: a FIFO, socket or device is never opened (opening a FIFO blocks until
    someone writes to it, which held a search for its whole deadline), and a symlink is not followed. A path in
    ``hidden`` (resolved; the sandbox's deny list) or under it is neither walked nor yielded.
    """
    root = root.resolve()
    specs: list[tuple[Path, pathspec.PathSpec[Any]]] = []
    for parent in [root, *[p for p in reversed(base.parents) if root in p.parents]]:
        _load_spec(parent, specs)
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        if here != base:
            _load_spec(here, specs)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in ALWAYS_SKIPPED and not is_hidden(here / d, hidden) and not _ignored(here / d, True, specs)
        )
        for name in sorted(filenames):
            path = here / name
            if _regular(path) and not is_hidden(path, hidden) and not _ignored(path, False, specs):
                yield path


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of a regular file of at most ``max_bytes`` (None otherwise). Opened without following a link
    and without blocking, then checked on the open descriptor, so a file swapped for a FIFO after the walk saw
    it still cannot block the read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(max_bytes + 1)[:max_bytes]
    except OSError:
        return None
    finally:
        os.close(fd)


def _load_spec(folder: Path, specs: list[tuple[Path, pathspec.PathSpec[Any]]]) -> None:
    data = read_regular(folder / ".gitignore", 1 << 20)
    if data is not None:
        lines = data.decode("utf-8", errors="replace").splitlines()
        specs.append((folder, pathspec.GitIgnoreSpec.from_lines(lines)))


def _ignored(path: Path, is_dir: bool, specs: list[tuple[Path, pathspec.PathSpec[Any]]]) -> bool:
    for folder, spec in specs:
        if folder == path or folder in path.parents:
            rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
    return False


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A predicate on folder-relative POSIX paths; globs follow .gitignore rules (``*.py`` matches at any depth)."""
    spec = pathspec.GitIgnoreSpec.from_lines([pattern])
    return spec.match_file
