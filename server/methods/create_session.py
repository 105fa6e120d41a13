"""``createSession {cwd, title?, approvalPolicy?, model?}`` -> ``{sessionId}``; an unknown model is ModelNotFound."""

from protocol.messages import CreateSessionParams, CreateSessionResult
from server.agent.models import checked_model_name
from server.rpc import method
from server.runtime import Runtime
from server.workspace import checked_folder


@method("createSession")
async def create_session(rt: Runtime, params: CreateSessionParams) -> CreateSessionResult:
    cwd = checked_folder(params.cwd)
    model = checked_model_name(rt.settings, params.model)
    session = await rt.store.create_session(str(cwd), params.title, params.approval_policy, model)
    return CreateSessionResult(session_id=session.id)
