"""``listApprovals {sessionId}`` -> ``{approvals}``: the session's remembered "allow always" grants."""

from protocol.messages import ListApprovalsParams, ListApprovalsResult
from server.methods.registry import reads
from server.services import sessions
from server.services.core import Core


@reads("listApprovals")
async def list_approvals(core: Core, params: ListApprovalsParams) -> ListApprovalsResult:
    return ListApprovalsResult(
        approvals=[sessions.approval_item(r) for r in await sessions.remembered_approvals(core, params.session_id)]
    )
