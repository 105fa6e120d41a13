"""``createSession {cwd, title?, approvalPolicy?}`` -> ``{sessionId}``."""

from protocol.messages import CreateSessionParams, CreateSessionResult
from server.rpc import method
from server.runtime import Runtime
from server.workspace import checked_folder


@method("createSession")
async def create_session(rt: Runtime, params: CreateSessionParams) -> CreateSessionResult:
    cwd = checked_folder(params.cwd)
    session = await rt.store.create_session(str(cwd), params.title, params.approval_policy)
    return CreateSessionResult(session_id=session.id)
