"""``listMcpServers {sessionId?}`` -> ``{servers}``: MCP servers with state, transport and tools."""

from pathlib import Path

from protocol.messages import ListMcpServersParams, ListMcpServersResult
from server.rpc import method
from server.runtime import Runtime


@method("listMcpServers")
async def list_mcp_servers(rt: Runtime, params: ListMcpServersParams) -> ListMcpServersResult:
    cwd = None
    if params.session_id is not None:
        cwd = Path((await rt.store.get_session(params.session_id)).cwd)
    return ListMcpServersResult(servers=await rt.mcp.list(rt.store, params.session_id, cwd))
