"""``steerTurn {sessionId, text}`` -> ``{turnId}``: a user message for the running turn's next model call."""

from protocol.messages import SteerTurnParams, SteerTurnResult
from server.agent.service import steer_turn as steer
from server.errors import InvalidParams
from server.rpc import method
from server.runtime import Runtime


@method("steerTurn")
async def steer_turn(rt: Runtime, params: SteerTurnParams) -> SteerTurnResult:
    if not params.text.strip():
        raise InvalidParams("text must not be empty")
    await rt.store.get_session(params.session_id)
    return steer(rt, params.session_id, params.text)
