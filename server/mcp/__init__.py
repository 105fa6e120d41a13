"""The MCP client: tools from Model Context Protocol servers, through the official ``mcp`` SDK.

``config`` (where servers come from), ``connection`` (one running server), ``manager`` (the shared servers of this
process), ``service`` (a session's servers and frozen tools), ``results`` (a tool result as text), ``names``
(``mcp__<server>__<tool>``); a project server is approved through ``server.security.project_approval``.

Nothing is imported here: ``server.config`` reads ``server.mcp.config`` and must not pull in the agent modules.
"""
