"""``mergeWorktree {sessionId, strategy?}`` -> ``{merged, conflicts?, commit?}`` (B-WT-1): the session's branch into
its base in the main checkout (clean, not mid-operation and on the base, else ``CheckoutNotClean``); a conflict
leaves the checkout exactly as it was and names the files. Not while the session's turn runs."""

from protocol.messages import MergeWorktreeParams, MergeWorktreeResult
from server.methods.registry import mutates
from server.services import worktrees
from server.services.core import Core


@mutates("mergeWorktree", exclusive=True)
async def merge_worktree(core: Core, params: MergeWorktreeParams) -> MergeWorktreeResult:
    return await worktrees.merge(core, params.session_id, params.strategy)
