"""File checkpoints as the use cases need them: ``listCheckpoints`` and ``rewindFiles`` (declared exclusive in the
method table: refused while a turn runs, which may be writing the very files)."""

from __future__ import annotations

from typing import Protocol

from protocol.messages import ListCheckpointsResult, RewindFilesParams, RewindFilesResult
from server.checkpoints import list_turn_checkpoints
from server.checkpoints import rewind_files as rewind
from server.services.needs import CoreFiles, CoreStore


class CheckpointsNeeds(CoreStore, CoreFiles, Protocol):
    """What the file-checkpoint use cases use of the ``Core``."""


async def list_checkpoints(core: CheckpointsNeeds, session_id: str) -> ListCheckpointsResult:
    return await list_turn_checkpoints(core.store, session_id)


async def rewind_files(core: CheckpointsNeeds, params: RewindFilesParams) -> RewindFilesResult:
    await core.session(params.session_id)
    return await rewind(
        core.store,
        core.blobs,
        params.session_id,
        params.to_turn_id,
        params.tool_call_id,
        dry_run=params.dry_run,
        force=params.force,
    )
