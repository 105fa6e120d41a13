"""``listApprovals {sessionId}`` -> ``{approvals}``: the session's remembered "allow always" grants."""

from protocol.messages import ListApprovalsParams, ListApprovalsResult, RememberedApproval
from server.agent.remembered import Remembered
from server.methods.registry import reads
from server.services import sessions
from server.services.core import Core


@reads("listApprovals")
async def list_approvals(core: Core, params: ListApprovalsParams) -> ListApprovalsResult:
    return ListApprovalsResult(
        approvals=[wire(r) for r in await sessions.remembered_approvals(core, params.session_id)]
    )


def wire(r: Remembered) -> RememberedApproval:
    return RememberedApproval(id=r.id, tool=r.tool, scope=r.scope, covers=r.covers, created_at=r.created_at)
