"""``revokeMcpServerApproval {cwd, name}`` -> ``{revoked}``: a project's .mcp.json server asks again."""

from protocol.messages import RevokeMcpServerApprovalParams, RevokeMcpServerApprovalResult
from server.methods.registry import mutates
from server.services import extensions
from server.services.core import Core


@mutates("revokeMcpServerApproval")
async def revoke_mcp_server_approval(
    core: Core, params: RevokeMcpServerApprovalParams
) -> RevokeMcpServerApprovalResult:
    return RevokeMcpServerApprovalResult(revoked=extensions.revoke_mcp_server_approval(core, params.cwd, params.name))
