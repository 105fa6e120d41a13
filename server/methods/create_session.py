"""``createSession {cwd, title?, approvalPolicy?, model?, mcpServers?}`` -> ``{sessionId}``; an unknown model is
ModelNotFound."""

import msgspec

from protocol.messages import CreateSessionParams, CreateSessionResult
from server.methods.registry import mutates
from server.services import sessions
from server.services.core import Core


@mutates("createSession")
async def create_session(core: Core, params: CreateSessionParams) -> CreateSessionResult:
    servers = [msgspec.to_builtins(s) for s in params.mcp_servers or []]
    session = await sessions.create_session(
        core, params.cwd, params.title, params.approval_policy, params.model, servers
    )
    return CreateSessionResult(session_id=session.id)
