"""``createSession {cwd, title?, approvalPolicy?, model?, mcpServers?}`` -> ``{sessionId}``; an unknown model is
ModelNotFound."""

import msgspec

from protocol.messages import CreateSessionParams, CreateSessionResult
from server.agent.models import checked_model_name
from server.errors import InvalidParams
from server.rpc import method
from server.runtime import Runtime
from server.workspace import checked_folder


@method("createSession")
async def create_session(rt: Runtime, params: CreateSessionParams) -> CreateSessionResult:
    cwd = checked_folder(params.cwd)
    model = checked_model_name(rt.settings, params.model)
    servers = [msgspec.to_builtins(s) for s in params.mcp_servers or []]
    try:
        rt.mcp.check_client_servers(servers, cwd)
    except ValueError as exc:
        raise InvalidParams(str(exc)) from None
    session = await rt.store.create_session(str(cwd), params.title, params.approval_policy, model)
    rt.mcp.set_client_servers(session.id, servers, cwd)
    return CreateSessionResult(session_id=session.id)
