"""The session folder and the boundary around it.

Every path a tool touches resolves inside the session's ``cwd``: ``..``, absolute paths elsewhere and symlinks
pointing out (including ones created mid-turn) are refused. Resolution follows links at the moment of use, so a
link made by ``run_command`` a second ago is judged by where it points now.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from server.errors import InvalidCwd
from server.sandbox.policy import is_git_name, is_hidden

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
MAX_LINKS = 40  # as the kernel's own limit on links followed in one path


class OutsideWorkspace(Exception):
    """A path that resolves outside the session folder; tools report it as ``Permission denied``."""


class UnusablePath(OutsideWorkspace):
    """A path that cannot be resolved at all (a link loop, a folder vanishing meanwhile): one failed tool call."""


class ProtectedPath(OutsideWorkspace):
    """A write into a git folder at any depth, or a path the deny list hides (B-SBX-4, B-SBX-1)."""


class NotRegularFile(Exception):
    """A FIFO, device, socket or directory where a regular file was expected: never read (it can block or be endless)."""


def is_inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (links resolved) is ``root`` or under it (``root`` resolved too); False when it cannot be
    resolved (a link loop)."""
    try:
        root, path = root.resolve(), path.resolve()
    except (OSError, RuntimeError):
        return False
    return path == root or root in path.parents


def read_regular_file(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """Up to ``max_bytes`` of a regular file, and its full size.

    Opened with ``O_NONBLOCK`` (a FIFO cannot block the open) and ``O_NOFOLLOW`` (a link swapped in after the path
    was resolved is not followed), then checked with ``fstat``: only a regular file is read, and never more than
    ``max_bytes``, so ``/dev/zero`` or a FIFO can neither exhaust memory nor freeze a worker thread.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    return _read_fd(fd, path.name, max_bytes)


def _read_fd(fd: int, name: str, max_bytes: int) -> tuple[bytes, int]:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (FIFO, device or socket)"
            raise NotRegularFile(f"{name} is {kind}")
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
    try:
        resolved = candidate.resolve()  # follows every symlink that exists now
    except (OSError, RuntimeError) as exc:  # a link loop (RuntimeError before 3.13), a folder vanishing meanwhile
        raise UnusablePath(f"{path}: cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None
    if resolved != root and root not in resolved.parents:
        raise OutsideWorkspace(f"Permission denied: {path} is outside the session folder {root}")
    return resolved


@dataclass
class Opened:
    """A path walked from the session folder one component at a time: the folder it is in, opened (``dir_fd``;
    ``close`` it), its name there (None when the path is that folder itself), and where that is, links resolved."""

    dir_fd: int
    name: str | None
    path: Path

    def close(self) -> None:
        os.close(self.dir_fd)


def open_inside(
    root: Path, raw: str, *, hidden: tuple[str, ...] = (), writing: bool = False, make_dirs: bool | None = None
) -> Opened:
    """Walk ``raw`` from ``root`` as the kernel would, but one ``openat(O_NOFOLLOW)`` at a time, so what is
    checked is what is then used: each folder is opened relative to the one before, a link is read and its
    target walked the same way (it must stay inside ``root``), and the caller reads or writes relative to the
    returned folder's descriptor. A folder swapped for a link after it was opened changes nothing; one swapped
    before is seen as the link it is. Refuses a path outside ``root`` or hidden (``hidden``: resolved paths),
    and, ``writing``, one into a git folder at any depth (B-SBX-4): a component ``.git`` in any case, or a
    folder laid out as a repository; missing folders are then made on the way (unless ``make_dirs`` is False)."""
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        raise OutsideWorkspace("Permission denied: path must be a non-empty string")
    if writing and any(is_git_name(part) for part in raw.split("/")):  # before any folder is made on the way
        raise ProtectedPath(_git_refusal(raw, Path(raw)))
    real_root = os.path.realpath(root)
    todo = deque(_root_relative(root, real_root, raw, raw))
    fds = [os.open(real_root, DIR_FLAGS)]
    names: list[str] = []
    links = 0
    try:
        while todo:
            part = todo.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if not names:
                    raise OutsideWorkspace(
                        f"Permission denied: {raw} is outside the session folder {real_root}"
                    ) from None
                os.close(fds.pop())
                names.pop()
                continue
            last = all(p in ("", ".") for p in todo)
            try:
                info: os.stat_result | None = os.stat(part, dir_fd=fds[-1], follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None and stat.S_ISLNK(info.st_mode):
                links += 1
                if links > MAX_LINKS:
                    raise UnusablePath(f"{raw}: cannot be resolved (too many levels of symbolic links)")
                target = os.readlink(part, dir_fd=fds[-1])
                if os.path.isabs(target):  # walked again from the top, so it must lead inside
                    for fd in fds[1:]:
                        os.close(fd)
                    del fds[1:], names[:]
                    todo.extendleft(reversed(_root_relative(root, real_root, target, raw)))
                else:
                    todo.extendleft(reversed(target.split("/")))
                continue
            here = Path(real_root, *names, part)
            if is_hidden(here, hidden):
                raise ProtectedPath(f"Permission denied: {raw} is hidden from the agent (sandbox deny_read)")
            if writing and is_git_name(part):
                raise ProtectedPath(_git_refusal(raw, here))
            if last and (info is None or not stat.S_ISDIR(info.st_mode)):
                return Opened(fds.pop(), part, here)
            try:
                fd = os.open(part, DIR_FLAGS, dir_fd=fds[-1])
            except FileNotFoundError:
                if os.path.normpath("/".join([*names, part, *todo])).split("/")[0] == "..":
                    raise OutsideWorkspace(
                        f"Permission denied: {raw} is outside the session folder {real_root}"
                    ) from None
                if not (writing if make_dirs is None else make_dirs) or last:
                    raise
                os.mkdir(part, dir_fd=fds[-1])
                fd = os.open(part, DIR_FLAGS, dir_fd=fds[-1])
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and links < MAX_LINKS and _is_link(part, fds[-1]):
                    todo.appendleft(part)  # swapped for a link meanwhile: look at it again, as the link it is
                    links += 1
                    continue
                raise
            fds.append(fd)
            names.append(part)
            if writing and _laid_out_as_git(fd):
                raise ProtectedPath(_git_refusal(raw, here))
        return Opened(fds.pop(), None, Path(real_root, *names))
    finally:
        for fd in fds:
            os.close(fd)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _git_refusal(raw: str, where: Path) -> str:
    return (
        f"Permission denied: {raw} is inside a git folder ({where}); git's own files are changed by git, "
        "never by the file tools (a hook or core.fsmonitor there would run at the next git command)"
    )


def _root_relative(root: Path, real_root: str, path: str, raw: str) -> list[str]:
    """``path`` as components below the session folder (given relative, or absolute under it as named or
    resolved); outside it is refused."""
    if not os.path.isabs(path):
        return path.split("/")
    normal = os.path.normpath(path)
    for base in (real_root, os.path.abspath(root)):
        if normal == base:
            return []
        if normal.startswith(base.rstrip("/") + "/"):
            return normal[len(base.rstrip("/")) + 1 :].split("/")
    raise OutsideWorkspace(f"Permission denied: {raw} is outside the session folder {real_root}")


def _laid_out_as_git(fd: int) -> bool:
    """A folder git would use as a repository (``HEAD``, ``objects/``, ``refs/``): a bare repository, or the
    git folder a ``.git`` file names, whatever its name."""
    try:
        os.stat("HEAD", dir_fd=fd, follow_symlinks=False)
        return all(stat.S_ISDIR(os.stat(n, dir_fd=fd, follow_symlinks=False).st_mode) for n in ("objects", "refs"))
    except OSError:
        return False


def read_regular_at(opened: Opened, max_bytes: int) -> tuple[bytes, int]:
    """``read_regular_file`` on what ``open_inside`` opened, relative to its folder, never through a link."""
    if opened.name is None:
        raise NotRegularFile(f"{opened.path.name} is a directory")
    fd = os.open(
        opened.name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=opened.dir_fd
    )
    return _read_fd(fd, opened.name, max_bytes)
