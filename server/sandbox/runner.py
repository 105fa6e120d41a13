"""Starting confined processes, and knowing whether we can (B-SBX-1, B-SBX-2).

Two ways in, one code path (``server.sandbox.linux.enter``):

- ``preexec(policy)`` (``server.sandbox.start``, where every process the server starts is started): a function
  for ``subprocess``'s ``preexec_fn``, run in the forked child before exec. It adds ~4 ms a command where the
  launcher adds ~35 ms (bench/sandbox_bench.py). The child runs only code bound before the fork (no imports, no
  library loading, no logging), so the parent's other threads cannot leave it waiting on a lock.
- ``wrap(policy, argv)``: an argv prefix that starts the launcher (``server.sandbox.launch``), for a start whose
  fork is not ours (a command line handed to another program).

``support()`` probes once per process whether confinement really works here: it confines a child for real and
runs ``true`` in it. ``THREADLINE_SANDBOX_PROBE`` is a test seam: ``fail`` makes the probe fail, ``no-userns``
makes it find no user namespaces (Landlock alone: partly confined, B-SBX-2 still asks).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from server.sandbox import landlock
from server.sandbox.policy import SandboxPolicy, build_policy
from server.sandbox.start import PIPE, SETUP_FAILED, Confine, preexec, start_blocking

__all__ = ["SETUP_FAILED", "Support", "machine_sandbox", "preexec", "private_tmpdir", "support", "wrap"]
PROBE_SEAM = "THREADLINE_SANDBOX_PROBE"
LAUNCHER = Path(__file__).with_name("launch.py")


@dataclass(frozen=True)
class Support:
    """What this machine can enforce. ``mechanism`` names it; ``reason`` says why it is not enforced. ``partial``:
    not enforced, but Landlock still confines writes and TCP (no user namespaces), so commands run under it too."""

    enforced: bool
    mechanism: str
    abi: int = 0
    namespaces: bool = False
    reason: str | None = None

    @property
    def partial(self) -> bool:
        return not self.enforced and self.abi > 0 and self.mechanism.startswith("landlock")


@functools.cache
def support() -> Support:
    if os.environ.get(PROBE_SEAM) == "fail":
        return Support(False, "none", reason=f"the sandbox probe was made to fail ({PROBE_SEAM}=fail)")
    if sys.platform == "darwin":
        return Support(False, "seatbelt", reason="the macOS Seatbelt sandbox is generated but not yet applied")
    if not sys.platform.startswith("linux"):
        return Support(False, "none", reason=f"no sandbox for {sys.platform}")
    abi = landlock.abi_version()
    if abi < 1:
        return Support(False, "none", reason="this kernel has no Landlock (Linux 5.13+ with landlock in lsm=)")
    with tempfile.TemporaryDirectory(prefix="threadline-probe-") as tmp:
        policy = build_policy("workspace-write", Path(tmp), Path(tmp))
        if os.environ.get(PROBE_SEAM) != "no-userns" and _works(policy, abi, namespaces=True):
            return Support(True, f"landlock-v{abi}+userns", abi, True)
        why = "user namespaces cannot be made here (kernel.unprivileged_userns_clone, AppArmor, or a container)"
        if _works(policy, abi, namespaces=False):
            return Support(False, f"landlock-v{abi}", abi, False, f"{why}: .git/ and deny_read are not protected")
        return Support(False, "none", abi, False, f"Landlock ABI {abi} is present but could not confine a process")


def machine_sandbox() -> dict[str, object]:
    """``initialize``'s ``capabilities.experimental.threadline.sandbox``: ``{enforced, mechanism, reason?}``."""
    found = support()
    return {"enforced": found.enforced, "mechanism": found.mechanism} | (
        {"reason": found.reason} if found.reason else {}
    )


def _works(policy: SandboxPolicy, abi: int, namespaces: bool) -> bool:
    try:
        proc = start_blocking(["true"], confine=Confine(policy, abi, namespaces), stdout=PIPE, stderr=PIPE)
        proc.communicate(timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def wrap(policy: SandboxPolicy, argv: list[str], namespaces: bool = True) -> list[str]:
    """``argv`` started through the launcher under ``policy``."""
    return [sys.executable, "-I", "-S", str(LAUNCHER), policy.to_json(), "1" if namespaces else "0", "--", *argv]


def private_tmpdir(key: str) -> Path:
    """A temp folder of this user's own for ``key`` (a session id) in this process, made on first use: ``TMPDIR``
    inside the sandbox, writable in every mode. Removed when this process exits (its commands are killed then,
    ``tools.processes``); named with the process id, so another server's exit never removes one in use."""
    base = Path(tempfile.gettempdir()) / f"threadline-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    if base.is_symlink() or base.stat().st_uid != os.getuid() or base.stat().st_mode & 0o077:
        raise OSError(f"{base} is not a private folder of this user; refusing to use it as a temp folder")
    path = base / f"{''.join(c for c in key if c.isalnum() or c in '-_')}.{os.getpid()}"
    if path not in _MADE:
        path.mkdir(mode=0o700, exist_ok=True)
        if not _MADE:
            atexit.register(remove_tmpdirs)
        _MADE.add(path)
    return path


_MADE: set[Path] = set()


def remove_tmpdirs() -> None:
    """Remove the temp folders this process made (at exit)."""
    for path in list(_MADE):
        shutil.rmtree(path, ignore_errors=True)
        _MADE.discard(path)
