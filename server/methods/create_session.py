"""``createSession {cwd, title?, approvalPolicy?, model?, mcpServers?, sandbox?}`` -> ``{sessionId, sandbox}``; an
unknown model is ModelNotFound. Where the sandbox cannot be enforced, the result says so and a notice is sent
once (B-SBX-2)."""

from pathlib import Path

import msgspec

from protocol.messages import CreateSessionParams, CreateSessionResult
from server.methods.registry import mutates
from server.services import sandbox, sessions
from server.services.core import Core


@mutates("createSession")
async def create_session(core: Core, params: CreateSessionParams) -> CreateSessionResult:
    servers = [msgspec.to_builtins(s) for s in params.mcp_servers or []]
    session = await sessions.create_session(
        core, params.cwd, params.title, params.approval_policy, params.model, servers
    )
    mode = params.sandbox if params.sandbox is not None else msgspec.UNSET
    status = await sandbox.apply_mode(core, session.id, Path(session.cwd), mode)
    return CreateSessionResult(session_id=session.id, sandbox=status)
