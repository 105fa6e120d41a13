"""``discardWorktree {sessionId, deleteBranch?}`` -> ``{discarded}`` (B-WT-1): the session's worktree removed (git
forgets it; the session stays readable) and, if asked, its branch. Not while the session's turn runs."""

from protocol.messages import DiscardWorktreeParams, DiscardWorktreeResult
from server.methods.registry import mutates
from server.services import worktrees
from server.services.core import Core


@mutates("discardWorktree", exclusive=True)
async def discard_worktree(core: Core, params: DiscardWorktreeParams) -> DiscardWorktreeResult:
    discarded = await worktrees.discard(core, params.session_id, bool(params.delete_branch))
    return DiscardWorktreeResult(discarded=discarded)
