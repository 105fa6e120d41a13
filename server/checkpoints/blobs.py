"""Checkpoint contents on disk: ``<root>/<sessionId>/<sha256>``, written once per distinct content."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from server.private_files import private_folder
from server.project.workspace import OutsideWorkspace, open_inside

CHUNK = 1 << 20


def digest_inside(root: Path, rel: str) -> str | None:
    """``file_digest`` of ``rel`` walked from ``root`` as the file tools walk it (``open_inside``): a folder on
    the way swapped for a link is never followed. A path that cannot be walked there hashes to a marker."""
    try:
        opened = open_inside(root, rel, make_dirs=False)
    except FileNotFoundError:
        return None
    except (OutsideWorkspace, OSError) as exc:
        return f"unreadable:{getattr(exc, 'errno', None) or type(exc).__name__}"
    try:
        return file_digest(opened.name, opened.dir_fd) if opened.name is not None else "not-a-regular-file"
    finally:
        opened.close()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: Path | str, dir_fd: int | None = None) -> str | None:
    """sha256 of a regular file (streamed, never following a link), or None when there is no file at ``path``
    (relative to ``dir_fd`` when given). Anything else there (a folder, a FIFO, a link) hashes to a marker no
    content can have."""
    try:
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not-a-regular-file"
        h = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


class Blobs:
    def __init__(self, root: Path):
        self.root = root

    def _path(self, session_id: str, key: str) -> Path:
        return self.root / session_id / key

    def has(self, session_id: str, key: str) -> bool:
        return self._path(session_id, key).exists()

    def put(self, session_id: str, data: bytes) -> str:
        """Keep ``data`` (once per content); returns its digest."""
        key = digest(data)
        target = self._path(session_id, key)
        if not target.exists():
            private_folder(target.parent)  # the files as they were: the user's alone (mkstemp's file is 0600)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".blob.")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return key

    def get(self, session_id: str, key: str) -> bytes | None:
        try:
            data = self._path(session_id, key).read_bytes()
        except FileNotFoundError:
            return None
        return data if digest(data) == key else None  # a damaged blob is not restored

    def drop_session(self, session_id: str) -> None:
        shutil.rmtree(self.root / session_id, ignore_errors=True)
