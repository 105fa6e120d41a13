"""``listMcpServers {sessionId?}`` -> ``{servers}``: MCP servers with state, transport and tools."""

from protocol.messages import ListMcpServersParams, ListMcpServersResult
from server.methods.registry import reads
from server.services import sessions
from server.services.core import Core


@reads("listMcpServers")
async def list_mcp_servers(core: Core, params: ListMcpServersParams) -> ListMcpServersResult:
    return ListMcpServersResult(servers=await sessions.mcp_servers(core, params.session_id))
