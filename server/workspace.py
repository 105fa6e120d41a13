"""The session folder and the boundary around it.

Every path a tool touches resolves inside the session's ``cwd``: ``..``, absolute paths elsewhere and symlinks
pointing out (including ones created mid-turn) are refused. Resolution follows links at the moment of use, so a
link made by ``run_command`` a second ago is judged by where it points now.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from server.rpc import RequestError


class OutsideWorkspace(Exception):
    """A path that resolves outside the session folder; tools report it as ``Permission denied``."""


def normalized_folder(cwd: str) -> Path:
    if not cwd or "\x00" in cwd:
        raise RequestError("InvalidCwd", "cwd must be a non-empty path")
    return Path(os.path.abspath(os.path.expanduser(cwd)))


def checked_folder(cwd: str) -> Path:
    """An existing directory, absolute and with links resolved, or a clear -32602 error."""
    path = normalized_folder(cwd)
    if not path.is_dir():
        raise RequestError("InvalidCwd", f"cwd {cwd!r} is not an existing folder")
    return path.resolve()


def resolve_inside(root: Path, path: str) -> Path:
    """``path`` (relative to ``root`` or absolute) resolved with links followed; it must stay under ``root``."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise OutsideWorkspace("Permission denied: path must be a non-empty string")
    root = root.resolve()
    raw = unicodedata.normalize("NFC", path)
    candidate = Path(raw) if os.path.isabs(raw) else root / raw
    resolved = candidate.resolve()  # follows every symlink that exists now
    if resolved != root and root not in resolved.parents:
        raise OutsideWorkspace(f"Permission denied: {path} is outside the session folder {root}")
    return resolved
