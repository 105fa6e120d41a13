"""MCP servers (``listMcpServers``, ``revokeMcpServerApproval``)."""

from __future__ import annotations

from typing import Literal

from protocol.base import Base

# --- MCP servers -----------------------------------------------------------------------------------------

McpServerState = Literal["stopped", "starting", "ready", "failed", "needsApproval"]


class ListMcpServersParams(Base):
    session_id: str | None = None


class McpToolInfo(Base):
    name: str  # as the MCP server names it
    model_name: str  # mcp__<server>__<tool>, what the model calls
    description: str | None = None


class McpServerInfo(Base):
    """``origin``: ``user`` (config.toml), ``project`` (.mcp.json) or ``client`` (createSession)."""

    name: str
    origin: Literal["user", "project", "client"]
    transport: Literal["stdio", "http"]
    state: McpServerState
    command_line: str
    tools: list[McpToolInfo]
    reason: str | None = None
    restarts: int = 0


class ListMcpServersResult(Base):
    servers: list[McpServerInfo]


class RevokeMcpServerApprovalParams(Base):
    """Forget the "allow always" given to a project's ``.mcp.json`` server: it asks again before its next start."""

    cwd: str
    name: str


class RevokeMcpServerApprovalResult(Base):
    revoked: bool
