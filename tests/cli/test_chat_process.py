"""``threadline chat`` as a local-model user ran it, a real chat process over a real server and the double.

The server's log lines go to the chat's log file, never into the conversation; Ctrl-C twice leaves cleanly (the
``cancelTurn`` request awaited, no "Task exception was never retrieved").
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY, REPO, server_env

THREADLINE = [str(Path(sys.executable).with_name("threadline"))]


def broken_mcp_server(home: Path) -> None:
    """A configured MCP server that cannot start: the server logs a WARNING when the turn starts it."""
    (home / "config.toml").write_text('[mcp_servers.broken]\ncommand = "/nonexistent/mcp-server"\n')


def test_issue_28_chat_sends_the_servers_log_lines_to_the_log_file(home: Path, folder: Path):
    broken_mcp_server(home)
    with FakeProvider(api_key=API_KEY) as fake:
        fake.push({"content": "hello from the model"})
        done = subprocess.run(
            [*THREADLINE, "chat", "--policy", "auto", "--cwd", str(folder), "say hello"],
            env=server_env(home, fake.url),
            cwd=str(REPO),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert "hello from the model" in done.stdout
    for stream in (done.stdout, done.stderr):
        assert "WARNING" not in stream and "server.mcp" not in stream, stream
    log = (home / "logs" / "chat.log").read_text()
    assert "WARNING server.mcp.service: MCP server broken failed" in log
    assert str(home / "logs" / "chat.log") in done.stdout  # the chat says where its log is
    assert (home / "logs" / "chat.log").stat().st_mode & 0o077 == 0


@pytest.mark.asyncio
async def test_issue_28_ctrl_c_twice_leaves_the_chat_cleanly(home: Path, folder: Path):
    with FakeProvider(api_key=API_KEY) as fake:
        fake.push({"content": "word " * 400, "chunks": 400, "chunk_delay": 0.05})
        proc = await asyncio.create_subprocess_exec(
            *THREADLINE,
            "chat",
            "--policy",
            "auto",
            "--cwd",
            str(folder),
            "talk for a long time",
            env=server_env(home, fake.url),
            cwd=str(REPO),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        seen = b""
        async with asyncio.timeout(120):
            while b"word word" not in seen:
                seen += await proc.stdout.read(256)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)  # at once: the cancel is still in flight
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode in (0, 130), err
    errors = err.decode()
    assert "Task exception was never retrieved" not in errors and "Traceback" not in errors, errors
    assert b"cancelling the turn" in seen + out
