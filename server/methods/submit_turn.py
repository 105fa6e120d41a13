"""``submitTurn {sessionId, text, images?}`` -> ``{turnId, stopReason, usage, error?}`` when the turn ends."""

from protocol.messages import SubmitTurnParams, SubmitTurnResult
from server.methods.registry import mutates
from server.services import turns
from server.services.core import Core


@mutates("submitTurn")
async def submit_turn(core: Core, params: SubmitTurnParams) -> SubmitTurnResult:
    return await turns.submit_turn(core, params)
