"""``revokeApproval {sessionId, id}`` -> ``{revoked}``: forget one "allow always"; the next such call asks."""

from protocol.messages import RevokeApprovalParams, RevokeApprovalResult
from server.agent.remembered import ApprovalNotFound, revoke
from server.methods.list_approvals import wire
from server.rpc import RequestError, method
from server.runtime import Runtime


@method("revokeApproval")
async def revoke_approval(rt: Runtime, params: RevokeApprovalParams) -> RevokeApprovalResult:
    await rt.store.get_session(params.session_id)
    remembered = await rt.remembered_approvals(params.session_id)
    try:
        grant = await revoke(rt.store, remembered, params.session_id, params.id)
    except ApprovalNotFound as exc:
        raise RequestError("ApprovalNotFound", str(exc)) from None
    return RevokeApprovalResult(revoked=wire(grant))
