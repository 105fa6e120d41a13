"""``cancelTurn {sessionId}`` -> ``{cancelled}``; the running ``submitTurn`` resolves with ``cancelled``."""

from protocol.messages import CancelTurnParams, CancelTurnResult
from server.methods.registry import mutates
from server.services import turns
from server.services.core import Core


@mutates("cancelTurn")
async def cancel_turn(core: Core, params: CancelTurnParams) -> CancelTurnResult:
    return CancelTurnResult(cancelled=await turns.cancel_turn(core, params.session_id))
