"""``rewindFiles {sessionId, toTurnId, toolCallId?, dryRun?, force?}`` -> ``{files: [{path, status}], note}``."""

from protocol.messages import RewindFilesParams, RewindFilesResult
from server.checkpoints import rewind_files as rewind
from server.rpc import method
from server.runtime import Runtime


@method("rewindFiles")
async def rewind_files(rt: Runtime, params: RewindFilesParams) -> RewindFilesResult:
    await rt.store.get_session(params.session_id)
    rt.turns.ensure_idle(params.session_id)  # a running turn may be writing the very files
    return await rewind(
        rt.store,
        rt.blobs,
        params.session_id,
        params.to_turn_id,
        params.tool_call_id,
        dry_run=params.dry_run,
        force=params.force,
    )
