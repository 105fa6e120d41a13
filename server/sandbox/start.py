"""The one launcher: every process the server starts begins here, with its sandbox policy as a parameter.

Tool commands in the foreground and the background (``server.tools.spawn``), hooks (``server.hooks.run``), MCP
stdio servers (``server.mcp.stdio``), the search workers (``server.patterns``), ``threadline sandbox``
(``server.serve``) and the sandbox's own probe (``server.sandbox.runner``) all start through ``start`` (an
asyncio process) or ``start_blocking`` (a ``Popen``, for starts outside the event loop); both build the child's
set-up the same way (``child_setup``), so the trust boundary is written once:

- ``confine``: the sandbox it runs under (``Confine``: a policy, the Landlock ABI, whether namespaces apply), or
  None for an unconfined start (an MCP server that did not opt in, an escalated command, a hook with ``sandbox =
  false``, ``--mode off``, the search workers, which run our own code on untrusted patterns).
- ``contain``: how it is born inside the server's PID namespace (``ProcessGroups.preexec``, B-PROC-1), so it ends
  with the server; None where there is nothing to end with (``threadline sandbox``'s command is its own child;
  the search workers watch their parent themselves).

In the child, before exec, it joins the namespace, forks the command (which alone is then confined, B-SBX-5), or
is confined itself where nothing is joined. Everything there runs only code bound before the fork (no imports, no
logging), which is what makes a ``preexec_fn`` safe in a server with threads. ``tests/test_one_launcher.py``
fails when anything else in ``server/`` creates a process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from server.sandbox.linux import enter
from server.sandbox.policy import SandboxPolicy

SETUP_FAILED = 125  # the launcher's and the child's exit status when confinement failed
Setup = Callable[[], None]
Contain = Callable[[Setup | None], Setup | None]  # ``ProcessGroups.preexec``: joins the server's PID namespace
Stream = int | IO[Any] | None
DEVNULL, PIPE, STDOUT = subprocess.DEVNULL, subprocess.PIPE, subprocess.STDOUT


@dataclass(frozen=True)
class Confine:
    """What a process is confined by: the sandbox ``policy``, this kernel's Landlock ``abi`` and whether the user,
    mount and network namespaces apply (``runner.Support``)."""

    policy: SandboxPolicy
    abi: int
    namespaces: bool


def preexec(policy: SandboxPolicy, abi: int, namespaces: bool) -> Setup:
    """The confinement alone, as a ``preexec_fn``: on failure it says why on the child's stderr and exits
    ``SETUP_FAILED`` (never exec unconfined, B-SBX-2)."""

    def confine() -> None:
        try:
            enter(policy, namespaces=namespaces, abi=abi)
        except BaseException as exc:  # noqa: BLE001 - never exec unconfined: say why on its stderr, and stop
            os.write(2, f"threadline sandbox: could not confine the command, so it did not run: {exc}\n".encode())
            os._exit(SETUP_FAILED)

    return confine


def child_setup(confine: Confine | None, contain: Contain | None) -> Setup | None:
    """The ``preexec_fn`` for a start: confined as ``confine`` says, inside the namespace ``contain`` joins."""
    setup = preexec(confine.policy, confine.abi, confine.namespaces) if confine is not None else None
    return contain(setup) if contain is not None else setup


async def start(
    argv: Sequence[str],
    *,
    confine: Confine | None,
    contain: Contain | None,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    stdin: Stream = DEVNULL,
    stdout: Stream = PIPE,
    stderr: Stream = PIPE,
    new_session: bool = True,
    limit: int = 1 << 16,
) -> asyncio.subprocess.Process:
    """Start ``argv`` from the event loop's thread (``contain``'s death signal is tied to the thread that starts
    it). ``new_session``: a process group of its own, so a stop reaches all it started and a terminal's Ctrl-C
    to the server is not its to get."""
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=new_session,
        preexec_fn=child_setup(confine, contain),
        limit=limit,
    )


def start_blocking(
    argv: Sequence[str],
    *,
    confine: Confine | None,
    contain: Contain | None = None,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    new_session: bool = False,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """``start`` for a caller outside the event loop (a command-line tool, a helper started once, a probe)."""
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=new_session,
        pass_fds=tuple(pass_fds),
        preexec_fn=child_setup(confine, contain),
    )
