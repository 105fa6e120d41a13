"""``revokeApproval {sessionId, id}`` -> ``{revoked}``: forget one "allow always"; the next such call asks."""

from protocol.messages import RevokeApprovalParams, RevokeApprovalResult
from server.methods.registry import mutates
from server.services import sessions
from server.services.core import Core


@mutates("revokeApproval")
async def revoke_approval(core: Core, params: RevokeApprovalParams) -> RevokeApprovalResult:
    grant = await sessions.revoke_approval(core, params.session_id, params.id)  # or ApprovalNotFound
    return RevokeApprovalResult(revoked=sessions.approval_item(grant))
