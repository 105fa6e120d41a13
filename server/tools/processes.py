"""The process groups ``run_command`` started, so the server can end them when it exits.

Each command runs in its own session (``start_new_session``), so its group id is the shell's pid and every
process it starts in the background (``nohup server &``) stays in that group after the shell has returned. They
may run on while the server lives (a dev server the model started); when the server exits, every group still
alive is killed.
"""

from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger(__name__)


class ProcessGroups:
    def __init__(self) -> None:
        self._groups: set[int] = set()

    def add(self, pgid: int) -> None:
        self._groups = {g for g in self._groups if _alive(g)}  # forget ended groups, so their ids are never reused
        self._groups.add(pgid)

    def kill_all(self) -> int:
        """SIGKILL every group still alive; returns how many were."""
        killed = 0
        for pgid in sorted(self._groups):
            try:
                os.killpg(pgid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        self._groups.clear()
        if killed:
            log.warning("killed %d process group(s) that commands had left running", killed)
        return killed


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
