"""``listApprovals {sessionId}`` -> ``{approvals}``: the session's remembered "allow always" grants."""

from protocol.messages import ListApprovalsParams, ListApprovalsResult, RememberedApproval
from server.agent.remembered import Remembered
from server.rpc import method
from server.runtime import Runtime


@method("listApprovals")
async def list_approvals(rt: Runtime, params: ListApprovalsParams) -> ListApprovalsResult:
    await rt.store.get_session(params.session_id)
    remembered = await rt.remembered_approvals(params.session_id)
    return ListApprovalsResult(approvals=[wire(r) for r in remembered.list()])


def wire(r: Remembered) -> RememberedApproval:
    return RememberedApproval(id=r.id, tool=r.tool, scope=r.scope, covers=r.covers, created_at=r.created_at)
