"""``deleteSession {sessionId}`` -> ``{}``: the one operation that removes stored messages."""

from protocol.messages import DeleteSessionParams, EmptyResult
from server.rpc import method
from server.runtime import Runtime


@method("deleteSession")
async def delete_session(rt: Runtime, params: DeleteSessionParams) -> EmptyResult:
    await rt.delete_session(params.session_id)
    return EmptyResult()
