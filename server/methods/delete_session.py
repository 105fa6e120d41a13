"""``deleteSession {sessionId, force?}`` -> ``{}``: the one operation that removes stored messages; a worktree
session's worktree and branch go too, refused with ``UnmergedWork`` while they hold unmerged work unless ``force``
(B-WT-1)."""

from protocol.messages import DeleteSessionParams, EmptyResult
from server.methods.registry import mutates
from server.services import sessions
from server.services.core import Core


@mutates("deleteSession")
async def delete_session(core: Core, params: DeleteSessionParams) -> EmptyResult:
    await sessions.delete_session(core, params.session_id, force=bool(params.force))
    return EmptyResult()
