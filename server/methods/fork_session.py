"""``forkSession {sessionId, atSeq?}`` -> ``{sessionId}``; the original session is untouched."""

from protocol.messages import ForkSessionParams, ForkSessionResult
from server.rpc import method
from server.runtime import Runtime


@method("forkSession")
async def fork_session(rt: Runtime, params: ForkSessionParams) -> ForkSessionResult:
    session = await rt.store.fork_session(params.session_id, params.at_seq)
    return ForkSessionResult(session_id=session.id)
