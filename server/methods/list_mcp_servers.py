"""``listMcpServers {sessionId?}`` -> ``{servers}``: MCP servers with state, transport and tools."""

from pathlib import Path

from protocol.messages import ListMcpServersParams, ListMcpServersResult
from server.methods.registry import reads
from server.services.core import Core


@reads("listMcpServers")
async def list_mcp_servers(core: Core, params: ListMcpServersParams) -> ListMcpServersResult:
    if params.session_id is None:
        return ListMcpServersResult(servers=await core.mcp.list(core.store, None, None))
    stored, session = await core.session(params.session_id)
    return ListMcpServersResult(servers=await core.mcp.list(core.store, (session.id, session.mcp), Path(stored.cwd)))
