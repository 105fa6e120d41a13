"""The MCP manager against a real MCP server (``tests.fakes.mcp_server``, the official SDK): sharing, release,
idle stop and restart on use. No Threadline server here: the manager and its connections alone."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from server.mcp.config import parse_user_servers
from server.mcp.manager import McpManager
from tests.harness import REPO


def fake_config(name: str = "fake"):
    [config] = parse_user_servers(
        {name: {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server"], "cwd": str(REPO)}}
    )
    return config


async def ready(conn, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while conn.state != "ready":
            await asyncio.sleep(0.05)


@pytest.mark.timeout(90)
async def test_shared_released_idle_stopped_and_restarted_on_use(tmp_path: Path):
    seen: list[tuple[str, str, list[str]]] = []
    manager = McpManager(
        tmp_path, lambda conn, sessions: seen.append((conn.config.name, conn.state, sessions)), idle_stop_s=1.0
    )
    try:
        [a] = manager.use("ses_a", [fake_config()])
        [b] = manager.use("ses_b", [fake_config()])
        assert a is b  # same configuration, one server
        await ready(a)
        assert {t.name for t in a.tools} >= {"echo", "big", "crash"}
        assert ("fake", "ready", ["ses_a", "ses_b"]) in seen

        manager.release("ses_a")
        assert manager.all() == [a] and a.state == "ready"  # still used by ses_b

        async with asyncio.timeout(10):  # no call for idle_stop_s: stopped, still known
            while a.state != "stopped":
                await asyncio.sleep(0.1)
        assert manager.connection("ses_b", "fake") is a
        result = await a.call("echo", {"text": "again"})  # a call starts it again
        assert result.content[0].text == "again"

        manager.release("ses_b")
        async with asyncio.timeout(10):
            while a.state != "stopped":
                await asyncio.sleep(0.05)
        assert manager.all() == []
    finally:
        await manager.close()


@pytest.mark.timeout(60)
async def test_an_unreachable_http_server_fails_with_a_reason_and_a_missing_program_too(tmp_path: Path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    configs = parse_user_servers(
        {
            "web": {"url": f"http://127.0.0.1:{port}/mcp", "startup_timeout_s": 5},
            "gone": {"command": "/nonexistent/mcp-server"},
        }
    )
    manager = McpManager(tmp_path, lambda conn, sessions: None)
    try:
        web, gone = manager.use("ses", configs)
        assert await web.wait_settled(10) and await gone.wait_settled(10)
        assert web.state == "failed" and web.reason
        assert gone.state == "failed" and "/nonexistent/mcp-server" in (gone.reason or "")
    finally:
        await manager.close()
