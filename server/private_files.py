"""What the server keeps under the data folder (``$THREADLINE_HOME``) is the user's alone: folders 0700, files 0600.

The transcripts, artifacts (large tool outputs), checkpoints (files as they were before an edit), the memory file,
and the logs of MCP servers, the daemon and the chat hold what sessions read and said. ``mkdir(parents=True)``
makes the folders on the way with the umask's mode (0755 as a rule) whatever ``mode`` says, and ``open`` makes
files 0644: on a shared machine, or under macOS's default 0755 homes, anyone could read them. So every folder the
server makes there is made by ``private_folder`` (each missing one on the way, the data folder itself included,
made 0700) and every file by ``open_private`` (made 0600).

A folder or file that already exists keeps its mode: the data folder may be one the user made and opened on
purpose (another user's client is then refused by the daemon's own folder and ``SO_PEERCRED``, docs/DAEMON.md),
and files made before this rule are the user's to tighten (``chmod -R go= "$THREADLINE_HOME"``). The process
umask is left alone: commands and hooks inherit it, and their files are the project's.

Stdlib only: the client (``threadline chat``'s log) uses it too.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: Path) -> Path:
    """``path`` as a folder, each missing one on the way to it made 0700 (a race with another process making the
    same one is fine); existing folders are left as they are. Returns ``path``."""
    missing: list[Path] = []
    here = path
    while not os.path.lexists(here) and here.parent != here:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            continue
        os.chmod(folder, FOLDER_MODE)  # a umask such as 0277 takes bits off mkdir's mode; ours is exact
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is not a folder")
    return path


def open_private(path: Path, flags: int) -> int:
    """``os.open(path, flags | O_CREAT, 0600)``: a file made here is the user's alone (an existing one keeps its
    mode). Its folder is made first with ``private_folder``."""
    private_folder(path.parent)
    return os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
