"""Hooks and MCP servers as a folder has them: list a folder's hooks, and take back a project's "allow always"
for its hooks or one of its MCP servers (``listHooks``, ``revokeHooksApproval``, ``revokeMcpServerApproval``)."""

from __future__ import annotations

from protocol.messages import HookInfo
from server.project.workspace import checked_folder
from server.services.needs import CoreExtensions


def list_hooks(core: CoreExtensions, cwd: str) -> tuple[list[HookInfo], list[str]]:
    """The hooks a session in ``cwd`` would run, and the problems found reading them."""
    return core.hooks.list(checked_folder(cwd))


def revoke_hooks_approval(core: CoreExtensions, cwd: str) -> bool:
    return core.hooks.revoke(checked_folder(cwd))


def revoke_mcp_server_approval(core: CoreExtensions, cwd: str, name: str) -> bool:
    return core.mcp.revoke(checked_folder(cwd), name)
