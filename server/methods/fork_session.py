"""``forkSession {sessionId, atSeq?}`` -> ``{sessionId}``; the original session is untouched."""

from protocol.messages import ForkSessionParams, ForkSessionResult
from server.errors import InvalidParams
from server.rpc import method
from server.runtime import Runtime


@method("forkSession")
async def fork_session(rt: Runtime, params: ForkSessionParams) -> ForkSessionResult:
    if params.at_seq is not None and params.at_seq < 0:
        raise InvalidParams("atSeq must be >= 0")
    session = await rt.store.fork_session(params.session_id, params.at_seq)
    return ForkSessionResult(session_id=session.id)
