"""``revokeHooksApproval {cwd}`` -> ``{revoked}``: a project's .threadline/hooks.toml asks again before it runs."""

from protocol.messages import RevokeHooksApprovalParams, RevokeHooksApprovalResult
from server.methods.registry import mutates
from server.services import extensions
from server.services.core import Core


@mutates("revokeHooksApproval")
async def revoke_hooks_approval(core: Core, params: RevokeHooksApprovalParams) -> RevokeHooksApprovalResult:
    return RevokeHooksApprovalResult(revoked=extensions.revoke_hooks_approval(core, params.cwd))
