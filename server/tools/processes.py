"""The processes the server starts, contained so that none outlives it, and the groups ``run_command`` started.

Every command, hook and MCP stdio server starts through ``ProcessGroups.preexec`` (a start we fork) or ``launch``
(an argv, for the MCP library): inside the server's PID
namespace (``server.sandbox.contain``), which the kernel empties when the server ends, by ``exit`` or by SIGKILL,
whatever the processes did (``setsid``, double forks, a scrubbed environment). Where no PID namespace can be
made, what follows is what is left.

Each command runs in its own session (``start_new_session``), so its group id is the shell's pid and every
process it starts in the background (``nohup server &``) stays in that group after the shell has returned. They
may run on while the server lives (a dev server the model started); when the server exits, every group still
alive is killed.

A server killed with SIGKILL cannot do that. So every command also carries ``TL_RUN_OWNER=<home>:<lease>`` in its
environment (the data folder's hash and the server's lease id, ``transcript.drafts.Lease``), and a server that
starts kills the processes marked with a lease of its own data folder whose server is gone. A process id alone
could have been reused by an unrelated program by then; the marker cannot, and a live server's commands (two
editors on one data folder) are left alone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path

from server.sandbox.contain import Keeper
from server.sandbox.policy import SandboxPolicy
from server.sandbox.runner import wrap

log = logging.getLogger(__name__)

MARKER = "TL_RUN_OWNER"


class ProcessGroups:
    def __init__(self) -> None:
        self._groups: set[int] = set()
        self._home = ""  # hash of the data folder
        self._owner = ""  # this server's lease id
        self._keeper: Keeper | None = None
        self._no_keeper = False  # tried once and no PID namespace could be made here

    def launch(self, argv: list[str], policy: SandboxPolicy | None = None, namespaces: bool = True) -> list[str]:
        """The argv to start instead of ``argv``: inside this server's PID namespace (made on first use), and
        confined under ``policy`` when given (``namespaces``: the sandbox's own, ``runner.Support.namespaces``).
        Any start may use it (``subprocess``, asyncio, an SDK that takes a command line); it ends, with all it
        started, at ``kill_all`` or when this process ends. Without a PID namespace: the sandbox launcher alone,
        or ``argv`` as it is."""
        keeper = self.keeper()
        if keeper is not None:
            return keeper.argv(argv, policy.to_json() if policy is not None else None, namespaces)
        return wrap(policy, argv, namespaces) if policy is not None else list(argv)

    def preexec(self, confine: Callable[[], None] | None = None) -> Callable[[], None] | None:
        """The ``preexec_fn`` for a start this server forks itself (``subprocess``, asyncio; from the event loop's
        thread): the process joins this server's PID namespace, then ``confine`` (``sandbox.runner.preexec``)
        runs. Everything the process starts ends at ``kill_all`` or with this process; the process itself is
        killed with its group (``add``) or when this process ends. Without a PID namespace: ``confine``."""
        keeper = self.keeper()
        return keeper.preexec(confine) if keeper is not None else confine

    def keeper(self) -> Keeper | None:
        if self._keeper is not None and not self._keeper.alive():
            self._keeper = None
        if self._keeper is None and not self._no_keeper:
            self._keeper = Keeper.start()
            self._no_keeper = self._keeper is None
            if self._no_keeper:
                log.warning("no PID namespace can be made here: commands are not contained (docs/RELIABILITY.md)")
        return self._keeper

    @property
    def contained(self) -> bool:
        return self.keeper() is not None

    def own(self, home: Path, lease_id: str) -> None:
        """Mark this server's commands from now on (see the module doc)."""
        self._home = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
        self._owner = lease_id

    def marker(self) -> dict[str, str]:
        """The environment entry every command carries, {} before ``own``."""
        return {MARKER: f"{self._home}:{self._owner}"} if self._owner else {}

    def reap_orphans(self, owner_alive: Callable[[str], bool], proc: Path = Path("/proc")) -> int:
        """SIGKILL the processes an earlier server of this data folder left running when it died; returns how
        many. Only processes of this user can be read, and only those carrying this data folder's marker with
        a lease whose server is gone are touched."""
        if not self._owner:
            return 0
        prefix = f"{MARKER}={self._home}:".encode()
        killed = 0
        for entry in proc.iterdir() if proc.is_dir() else ():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:  # not ours, or gone
                continue
            owner = next(
                (v[len(prefix) :].decode(errors="replace") for v in environ.split(b"\0") if v.startswith(prefix)), None
            )
            if owner is None or owner == self._owner or owner_alive(owner):
                continue
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        if killed:
            log.warning("killed %d process(es) that commands of a server that died had left running", killed)
        return killed

    def add(self, pgid: int) -> None:
        self._groups = {g for g in self._groups if _alive(g)}  # forget ended groups, so their ids are never reused
        self._groups.add(pgid)

    def kill_all(self) -> int:
        """SIGKILL every group still alive and every process in the PID namespace; returns how many groups were."""
        if self._keeper is not None:
            self._keeper.stop()
            self._keeper = None
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
