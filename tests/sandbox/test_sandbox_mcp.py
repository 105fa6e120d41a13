"""B-SBX-1: an MCP stdio server that opts in (``sandbox = "workspace-write"``) runs confined; one that does not,
does not. A real MCP server (the official SDK), the real manager, this machine's kernel."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from mcp.types import TextContent

from server.errors import McpConfigError
from server.mcp.config import parse_user_servers
from server.mcp.manager import McpManager
from server.sandbox.runner import support

WRITER = str(Path(__file__).with_name("mcp_writer.py"))
pytestmark = pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}")


async def write_with(tmp_path: Path, sandbox: str | None, target: Path) -> str:
    folder = tmp_path / "folder"
    folder.mkdir(exist_ok=True)
    entry = {"command": sys.executable, "args": [WRITER], "cwd": str(folder)}
    if sandbox:
        entry["sandbox"] = sandbox
    [config] = parse_user_servers({"writer": entry})
    manager = McpManager(tmp_path / "home" / "mcp-logs", lambda conn, sessions: None)
    try:
        [conn] = manager.use("ses", [config])
        async with asyncio.timeout(60):
            while conn.state != "ready":
                assert conn.state != "failed", conn.reason
                await asyncio.sleep(0.05)
        result = await conn.call("write", {"path": str(target), "text": "x"})
        first = result.content[0]
        assert isinstance(first, TextContent)
        return first.text
    finally:
        await manager.close()


@pytest.mark.timeout(120)
async def test_B_SBX_1_an_opted_in_mcp_server_writes_only_in_its_folder(tmp_path: Path):
    outside = tmp_path / "outside.txt"
    assert (await write_with(tmp_path, "workspace-write", outside)).startswith("refused: Permission denied")
    assert not outside.exists()
    inside = tmp_path / "folder" / "inside.txt"
    assert await write_with(tmp_path, "workspace-write", inside) == "written" and inside.exists()


@pytest.mark.timeout(120)
async def test_B_SBX_1_an_mcp_server_that_does_not_opt_in_is_not_confined(tmp_path: Path):
    outside = tmp_path / "outside.txt"
    assert await write_with(tmp_path, None, outside) == "written" and outside.exists()


def test_B_SBX_1_mcp_sandbox_value_is_checked():
    with pytest.raises(McpConfigError, match="sandbox must be"):
        parse_user_servers({"w": {"command": "x", "sandbox": "everything"}})
    [config] = parse_user_servers({"w": {"command": "x", "sandbox": "workspace-write"}})
    assert "(sandbox: workspace-write)" in config.command_line
