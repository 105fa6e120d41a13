"""``listCheckpoints {sessionId}`` -> ``{turns: [{turnId, seq, createdAt, files}], note}``."""

from protocol.messages import ListCheckpointsParams, ListCheckpointsResult
from server.checkpoints import list_turn_checkpoints
from server.rpc import method
from server.runtime import Runtime


@method("listCheckpoints")
async def list_checkpoints(rt: Runtime, params: ListCheckpointsParams) -> ListCheckpointsResult:
    return await list_turn_checkpoints(rt.store, params.session_id)
