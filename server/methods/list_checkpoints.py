"""``listCheckpoints {sessionId}`` -> ``{turns: [{turnId, seq, createdAt, files}], note}``."""

from protocol.messages import ListCheckpointsParams, ListCheckpointsResult
from server.methods.registry import reads
from server.services import checkpoints
from server.services.core import Core


@reads("listCheckpoints")
async def list_checkpoints(core: Core, params: ListCheckpointsParams) -> ListCheckpointsResult:
    return await checkpoints.list_checkpoints(core, params.session_id)
