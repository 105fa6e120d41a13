"""``createSession {cwd, title?, approvalPolicy?, model?, mcpServers?, sandbox?, worktree?, base?}`` -> ``{sessionId,
sandbox, worktree?}``; an unknown model is ModelNotFound. Where the sandbox cannot be enforced, the result says so
and a notice is sent once (B-SBX-2). With ``worktree`` the session works in a new git worktree of ``cwd``'s
repository (B-WT-1): not in one, ``NotAGitRepository``; a name in use there, ``WorktreeExists``."""

from pathlib import Path

import msgspec

from protocol.messages import CreateSessionParams, CreateSessionResult
from server.errors import InvalidParams
from server.methods.registry import mutates
from server.services import sandbox, sessions, worktrees
from server.services.core import Core


@mutates("createSession")
async def create_session(core: Core, params: CreateSessionParams) -> CreateSessionResult:
    servers = [msgspec.to_builtins(s) for s in params.mcp_servers or []]
    options = {"title": params.title, "approval_policy": params.approval_policy, "model": params.model}
    made = None
    if params.worktree not in (None, False):
        assert params.worktree is not None
        session, made = await sessions.create_worktree_session(
            core, params.cwd, params.worktree, params.base, mcp_servers=servers, **options
        )
    elif params.base is not None:
        raise InvalidParams("base is for a worktree session: give worktree too")
    else:
        session = await sessions.create_session(core, params.cwd, mcp_servers=servers, **options)
    mode = params.sandbox if params.sandbox is not None else msgspec.UNSET
    status = await sandbox.apply_mode(core, session.id, Path(session.cwd), mode)
    worktree = await worktrees.info(made) if made is not None else None
    return CreateSessionResult(session_id=session.id, sandbox=status, worktree=worktree)
