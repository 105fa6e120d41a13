"""``forkSession {sessionId, atSeq?}`` -> ``{sessionId}``; the original session is untouched."""

from protocol.messages import ForkSessionParams, ForkSessionResult
from server.methods.registry import mutates
from server.services import sessions
from server.services.core import Core


@mutates("forkSession")
async def fork_session(core: Core, params: ForkSessionParams) -> ForkSessionResult:
    forked = await sessions.fork_session(core, params.session_id, params.at_seq)
    return ForkSessionResult(session_id=forked.id)
