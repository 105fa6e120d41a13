"""Walking the session folder the way git would: ``.gitignore`` files respected, ``.git`` skipped."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pathspec

ALWAYS_SKIPPED = {".git", ".hg", ".svn", ".threadline-tmp"}


def walk_files(root: Path, base: Path) -> Iterator[Path]:
    """Files under ``base`` (inside ``root``) not ignored by any ``.gitignore`` from ``root`` down.

    Symlinked directories are not followed, so a link pointing outside the folder is never walked into.
    """
    root = root.resolve()
    specs: list[tuple[Path, pathspec.PathSpec]] = []
    for parent in [root, *[p for p in reversed(base.parents) if root in p.parents]]:
        _load_spec(parent, specs)
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        if here != base:
            _load_spec(here, specs)
        dirnames[:] = sorted(d for d in dirnames if d not in ALWAYS_SKIPPED and not _ignored(here / d, True, specs))
        for name in sorted(filenames):
            path = here / name
            if not _ignored(path, False, specs) and not path.is_symlink():
                yield path


def _load_spec(folder: Path, specs: list[tuple[Path, pathspec.PathSpec]]) -> None:
    ignore = folder / ".gitignore"
    if ignore.is_file():
        try:
            lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        specs.append((folder, pathspec.GitIgnoreSpec.from_lines(lines)))


def _ignored(path: Path, is_dir: bool, specs: list[tuple[Path, pathspec.PathSpec]]) -> bool:
    for folder, spec in specs:
        if folder == path or folder in path.parents:
            rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
    return False


def glob_matcher(pattern: str):
    """A predicate on folder-relative POSIX paths; globs follow .gitignore rules (``*.py`` matches at any depth)."""
    spec = pathspec.GitIgnoreSpec.from_lines([pattern])
    return spec.match_file
