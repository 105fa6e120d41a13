"""``rewindFiles {sessionId, toTurnId, toolCallId?, dryRun?, force?}`` -> ``{files: [{path, status}], note}``."""

from protocol.messages import RewindFilesParams, RewindFilesResult
from server.methods.registry import mutates
from server.services import checkpoints
from server.services.core import Core


@mutates("rewindFiles", exclusive=True)
async def rewind_files(core: Core, params: RewindFilesParams) -> RewindFilesResult:
    return await checkpoints.rewind_files(core, params)
