"""``deleteSession {sessionId}`` -> ``{}``: the one operation that removes stored messages."""

from protocol.messages import DeleteSessionParams, EmptyResult
from server.methods.registry import mutates
from server.services import sessions
from server.services.core import Core


@mutates("deleteSession")
async def delete_session(core: Core, params: DeleteSessionParams) -> EmptyResult:
    await sessions.delete_session(core, params.session_id)
    return EmptyResult()
