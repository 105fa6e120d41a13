"""A session's sandbox for its commands: its mode (``server.sandbox.mode``) and, in a worktree session, the git data
that is the task's alone (B-WT-1). Here, above both, so the sandbox knows nothing of worktrees and the worktrees'
own git can start through the one launcher (``server.sandbox.start``) without a folder cycle."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from server.sandbox.mode import CommandSandbox, command_sandbox, session_mode
from server.sandbox.policy import SandboxSettings
from server.worktrees.record import load as load_worktree

if TYPE_CHECKING:
    from server.transcript import Store


async def session_sandbox(store: Store, settings: SandboxSettings, session_id: str, cwd: Path) -> CommandSandbox:
    """What the session's commands run under now (B-SBX-1: read once a turn)."""
    sandbox = command_sandbox(settings, session_id, cwd, await session_mode(store, settings, session_id))
    worktree = await load_worktree(store, session_id)
    if worktree is None or worktree.state == "discarded":
        return sandbox
    # B-WT-1: a worktree task commits into git data of its own, nothing of the repository's
    return replace(sandbox, policy=sandbox.policy.with_git_grant(*worktree.grant()))
