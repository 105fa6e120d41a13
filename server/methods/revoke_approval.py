"""``revokeApproval {sessionId, id}`` -> ``{revoked}``: forget one "allow always"; the next such call asks."""

from protocol.messages import RevokeApprovalParams, RevokeApprovalResult
from server.agent.remembered import revoke
from server.methods.list_approvals import wire
from server.rpc import method
from server.runtime import Runtime


@method("revokeApproval")
async def revoke_approval(rt: Runtime, params: RevokeApprovalParams) -> RevokeApprovalResult:
    await rt.store.get_session(params.session_id)
    remembered = await rt.remembered_approvals(params.session_id)
    grant = await revoke(rt.store, remembered, params.session_id, params.id)  # or ApprovalNotFound
    return RevokeApprovalResult(revoked=wire(grant))
