"""``readArtifact``: a stored tool output by byte range, line range or regex search (R-ART-2)."""

from protocol.messages import ReadArtifactParams, ReadArtifactResult
from server.methods.registry import reads
from server.services import history
from server.services.core import Core


@reads("readArtifact")
async def read_artifact(core: Core, params: ReadArtifactParams) -> ReadArtifactResult:
    return await history.read_artifact(core, params)
