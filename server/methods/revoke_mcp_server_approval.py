"""``revokeMcpServerApproval {cwd, name}`` -> ``{revoked}``: a project's .mcp.json server asks again."""

from protocol.messages import RevokeMcpServerApprovalParams, RevokeMcpServerApprovalResult
from server.methods.registry import mutates
from server.project.workspace import checked_folder
from server.services.core import Core


@mutates("revokeMcpServerApproval")
async def revoke_mcp_server_approval(
    core: Core, params: RevokeMcpServerApprovalParams
) -> RevokeMcpServerApprovalResult:
    return RevokeMcpServerApprovalResult(revoked=core.mcp.revoke(checked_folder(params.cwd), params.name))
