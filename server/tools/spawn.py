"""Where every command the agent runs is started: ``run_command``'s, in the foreground or the background.

One place, so the containment is the same for both and a primitive can replace it whole: the session's sandbox
(Landlock and namespaces, ``server.sandbox``), every ``.git`` read-only (B-SBX-4), its own process group, and
registered with ``ProcessGroups`` so it ends with the server (B-PROC-1).
"""

from __future__ import annotations

import asyncio

from server.sandbox.start import Confine, start
from server.tools.base import ToolContext


async def spawn_command(ctx: ToolContext, command: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    """Start ``command`` under ``bash -c`` as the session's sandbox says (``ctx.sandbox``; None or not applying:
    unconfined, as an escalated command), its output on one pipe."""
    sandbox = ctx.sandbox if ctx.sandbox is not None and ctx.sandbox.applies else None
    policy = sandbox.policy if sandbox is not None else None
    # Every .git that exists now, at any depth, is read-only to this command (B-SBX-4): walked per command, off
    # the event loop, so a repository made by one command is protected from the next. Without namespaces nothing
    # can be mounted (B-SBX-2 asks instead): no walk then.
    if sandbox is not None and sandbox.support.namespaces:
        policy = await asyncio.to_thread(sandbox.policy.with_nested_git)
    confine = Confine(policy, sandbox.support.abi, sandbox.support.namespaces) if sandbox and policy else None
    proc = await start(  # contained: all it starts ends with the server, SIGKILL included
        ["/bin/bash", "-c", command],
        confine=confine,
        contain=ctx.processes.preexec if ctx.processes is not None else None,
        cwd=ctx.cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    if ctx.processes is not None:
        ctx.processes.add(proc.pid)  # its group outlives the shell when the command backgrounds something
    return proc
