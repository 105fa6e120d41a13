"""``rewindFiles {sessionId, toTurnId, toolCallId?, dryRun?, force?}`` -> ``{files: [{path, status}], note}``."""

from protocol.messages import RewindFilesParams, RewindFilesResult
from server.checkpoints import rewind_files as rewind
from server.methods.registry import mutates
from server.services.core import Core


@mutates("rewindFiles")
async def rewind_files(core: Core, params: RewindFilesParams) -> RewindFilesResult:
    _, session = await core.session(params.session_id)
    session.turns.ensure_idle()  # a running turn may be writing the very files
    return await rewind(
        core.store,
        core.blobs,
        params.session_id,
        params.to_turn_id,
        params.tool_call_id,
        dry_run=params.dry_run,
        force=params.force,
    )
