"""``revokeMcpServerApproval {cwd, name}`` -> ``{revoked}``: a project's .mcp.json server asks again."""

from protocol.messages import RevokeMcpServerApprovalParams, RevokeMcpServerApprovalResult
from server.rpc import method
from server.runtime import Runtime
from server.workspace import checked_folder


@method("revokeMcpServerApproval")
async def revoke_mcp_server_approval(
    rt: Runtime, params: RevokeMcpServerApprovalParams
) -> RevokeMcpServerApprovalResult:
    return RevokeMcpServerApprovalResult(revoked=rt.mcp.trust.revoke(checked_folder(params.cwd), params.name))
