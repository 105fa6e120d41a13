"""The MCP client: tools from Model Context Protocol servers, through the official ``mcp`` SDK.

``config`` (where servers come from), ``connection`` (one running server), ``manager`` (the shared servers of this
process), ``service`` (a session's servers and frozen tools), ``results`` (a tool result as text), ``names``
(``mcp__<server>__<tool>``), ``trust`` (remembered approvals of project servers).
"""

from server.mcp.service import McpService, load_frozen

__all__ = ["McpService", "load_frozen"]
