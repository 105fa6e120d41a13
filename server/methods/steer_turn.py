"""``steerTurn {sessionId, text}`` -> ``{turnId}``: a user message for the running turn's next model call."""

from protocol.messages import SteerTurnParams, SteerTurnResult
from server.methods.registry import mutates
from server.services import turns
from server.services.core import Core


@mutates("steerTurn")
async def steer_turn(core: Core, params: SteerTurnParams) -> SteerTurnResult:
    return await turns.steer_turn(core, params.session_id, params.text)
