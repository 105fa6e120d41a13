"""``cancelTurn {sessionId}`` -> ``{cancelled}``; the running ``submitTurn`` resolves with ``cancelled``."""

from protocol.messages import CancelTurnParams, CancelTurnResult
from server.rpc import method
from server.runtime import Runtime


@method("cancelTurn")
async def cancel_turn(rt: Runtime, params: CancelTurnParams) -> CancelTurnResult:
    await rt.store.get_session(params.session_id)
    return CancelTurnResult(cancelled=rt.turns.cancel(params.session_id))
