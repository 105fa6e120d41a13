"""``listSessions {cwd?, limit?}`` -> ``{sessions}``, newest first."""

from protocol.messages import ListSessionsParams, ListSessionsResult, SessionInfo
from server.rpc import method
from server.runtime import Runtime
from server.workspace import normalized_folder


@method("listSessions")
async def list_sessions(rt: Runtime, params: ListSessionsParams) -> ListSessionsResult:
    cwd = None if params.cwd is None else str(normalized_folder(params.cwd))
    sessions = await rt.store.list_sessions(cwd, params.limit)
    return ListSessionsResult(sessions=[
        SessionInfo(session_id=s.id, title=s.title, cwd=s.cwd, created_at=s.created_at, updated_at=s.updated_at,
                    message_count=s.message_count, parent_session_id=s.parent_id, model=s.model,
                    approval_policy=s.approval_policy)
        for s in sessions
    ])
