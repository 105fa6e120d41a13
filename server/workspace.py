"""The session folder and the boundary around it.

Every path a tool touches resolves inside the session's ``cwd``: ``..``, absolute paths elsewhere and symlinks
pointing out (including ones created mid-turn) are refused. Resolution follows links at the moment of use, so a
link made by ``run_command`` a second ago is judged by where it points now.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from server.errors import InvalidCwd


class OutsideWorkspace(Exception):
    """A path that resolves outside the session folder; tools report it as ``Permission denied``."""


class NotRegularFile(Exception):
    """A FIFO, device, socket or directory where a regular file was expected: never read (it can block or be endless)."""


def is_inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (links resolved) is ``root`` or under it (``root`` resolved too)."""
    root, path = root.resolve(), path.resolve()
    return path == root or root in path.parents


def read_regular_file(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """Up to ``max_bytes`` of a regular file, and its full size.

    Opened with ``O_NONBLOCK`` (a FIFO cannot block the open) and ``O_NOFOLLOW`` (a link swapped in after the path
    was resolved is not followed), then checked with ``fstat``: only a regular file is read, and never more than
    ``max_bytes``, so ``/dev/zero`` or a FIFO can neither exhaust memory nor freeze a worker thread.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (FIFO, device or socket)"
            raise NotRegularFile(f"{path.name} is {kind}")
        os.set_blocking(fd, True)
        chunks, left = [], max_bytes
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), info.st_size
    finally:
        os.close(fd)


def normalized_folder(cwd: str) -> Path:
    if not cwd or "\x00" in cwd:
        raise InvalidCwd("cwd must be a non-empty path")
    return Path(os.path.abspath(os.path.expanduser(cwd)))


def checked_folder(cwd: str) -> Path:
    """An existing directory, absolute and with links resolved, or ``InvalidCwd`` saying why not."""
    path = normalized_folder(cwd)
    try:
        if not path.is_dir():
            raise InvalidCwd(f"cwd {cwd[:300]!r} is not an existing folder")
        return path.resolve()
    except OSError as exc:  # ENAMETOOLONG, EACCES, ELOOP ...: a bad cwd, not a server fault
        raise InvalidCwd(f"cwd is not a usable folder: {exc.strerror or exc}") from None


def resolve_inside(root: Path, path: str) -> Path:
    """``path`` (relative to ``root`` or absolute) resolved with links followed; it must stay under ``root``."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise OutsideWorkspace("Permission denied: path must be a non-empty string")
    root = root.resolve()
    # The name is used exactly as given: Linux file names are bytes, so normalising (NFC) would turn a decomposed
    # name that exists into one that does not, and make write_file create a second file beside it. No
    # normalisation can make ``..`` of anything but two real dots, so this loses no protection.
    candidate = Path(path) if os.path.isabs(path) else root / path
    resolved = candidate.resolve()  # follows every symlink that exists now
    if resolved != root and root not in resolved.parents:
        raise OutsideWorkspace(f"Permission denied: {path} is outside the session folder {root}")
    return resolved
