"""``listCheckpoints {sessionId}`` -> ``{turns: [{turnId, seq, createdAt, files}], note}``."""

from protocol.messages import ListCheckpointsParams, ListCheckpointsResult
from server.checkpoints import list_turn_checkpoints
from server.methods.registry import reads
from server.services.core import Core


@reads("listCheckpoints")
async def list_checkpoints(core: Core, params: ListCheckpointsParams) -> ListCheckpointsResult:
    return await list_turn_checkpoints(core.store, params.session_id)
