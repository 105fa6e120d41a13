"""``forkSession {sessionId, atSeq?}`` -> ``{sessionId}``; the original session is untouched."""

from protocol.messages import ForkSessionParams, ForkSessionResult
from server.errors import InvalidParams
from server.methods.registry import mutates
from server.services import sandbox
from server.services.core import Core


@mutates("forkSession")
async def fork_session(core: Core, params: ForkSessionParams) -> ForkSessionResult:
    if params.at_seq is not None and params.at_seq < 0:
        raise InvalidParams("atSeq must be >= 0")
    session = await core.store.fork_session(params.session_id, params.at_seq)
    await sandbox.copy_mode(core.store, params.session_id, session.id)
    return ForkSessionResult(session_id=session.id)
