"""``submitTurn {sessionId, text, images?}`` -> ``{turnId, stopReason, usage, error?}`` when the turn ends."""

from protocol.messages import SubmitTurnParams, SubmitTurnResult
from server.agent.service import submit_turn as run_submitted_turn
from server.rpc import method
from server.runtime import Runtime


@method("submitTurn")
async def submit_turn(rt: Runtime, params: SubmitTurnParams) -> SubmitTurnResult:
    return await run_submitted_turn(rt, params)
