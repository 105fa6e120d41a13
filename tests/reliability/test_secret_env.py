"""Security: no secret the server reads is in the environment block of any process a command can read.

The attack is the one the review made: ``run_command`` prints ``/proc/$PPID/environ`` (the block the server was
started with, which scrubbing ``os.environ`` does not change) and the block of an MCP server the session started.
The key is named by ``api_key_env`` (a name outside the built-in list) or sits in ``THREADLINE_BASE_URL`` as a
password; ``threadline acp`` is checked through its own block (the same file a command would read).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from server.cli.client import Client
from tests.fakes.fake_provider import FakeProvider
from tests.harness import MODEL, REPO, initialize, server_env, start_server
from tests.reliability.support import FIND_SERVER

KEY = "xai-SECRET-key-3b9f01d"
URL_PASS = "URLPASS-SECRET-77c2e1"
MCP_TOKEN = "mcp-token-SECRET-41aa90"  # named as ${MCP_TEST_TOKEN} by config.toml's MCP server


def config(home: Path, pidfile: Path) -> None:
    """``api_key_env`` names a variable outside the built-in list; an MCP server whose pid the test can find."""
    (home / "config.toml").write_text(
        f"""
[provider]
api_key_env = "XAI_API_KEY"

[mcp_servers.fake]
command = {json.dumps(sys.executable)}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
env = {{ FAKE_MCP_PIDFILE = {json.dumps(str(pidfile))}, FAKE_TOKEN = "${{MCP_TEST_TOKEN}}" }}
"""
    )


ATTACK = (
    FIND_SERVER + "tr '\\0' '\\n' < /proc/$p/environ; echo PPID=$p; env; echo ---MCP---; "
    "tr '\\0' '\\n' < /proc/$(head -1 {pidfile})/environ"
)


@pytest.mark.parametrize("where", ["api_key_env", "base_url_password"])
async def test_issue28_a_key_named_by_api_key_env_or_a_url_password_is_in_no_environment_block(where, tmp_path):
    home, work, pidfile = tmp_path / "home", tmp_path / "work", tmp_path / "mcp-pids"
    home.mkdir()
    work.mkdir()
    config(home, pidfile)
    # The fake checks the key (Bearer) in the first case; a URL with userinfo sends Basic auth, so not in the second.
    with FakeProvider(api_key=KEY if where == "api_key_env" else None) as fake:
        url = fake.url if where == "api_key_env" else fake.url.replace("http://", f"http://user:{URL_PASS}@")
        env = server_env(
            home,
            None,
            THREADLINE_BASE_URL=url,
            THREADLINE_MODEL=MODEL,
            THREADLINE_APPROVAL_POLICY="auto",
            XAI_API_KEY=KEY,
            MCP_TEST_TOKEN=MCP_TOKEN,
            COPY_OF_URL=url,  # a variable holding the same value goes too
            THREADLINE_SANDBOX="off",  # clean even where commands are not confined (the sandbox refuses the read)
        )
        client = await initialize(Client(await start_server(home, env=env)))
        try:
            sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
            command = ATTACK.format(pidfile=pidfile)
            fake.push({"tool_calls": [{"id": "call_a", "name": "run_command", "arguments": {"command": command}}]})
            fake.push({"content": "done"})
            result = await asyncio.wait_for(client.request("submitTurn", {"sessionId": sid, "text": "go"}), 60)
            assert result["stopReason"] == "endTurn", result
            [shown] = [
                p["update"]["content"]
                for m, p in client.notifications
                if m == "sessionUpdate" and p["update"]["kind"] == "toolResult"
            ]
        finally:
            await client.close()
    own, _, mcp = shown.partition("---MCP---")
    assert "THREADLINE_HOME=" in own and "PPID=" in own, shown  # it did read the server's block
    assert "FAKE_MCP_PIDFILE=" in mcp, shown  # and the MCP server's
    assert KEY not in shown and URL_PASS not in shown and "XAI_API_KEY" not in shown, shown
    # a key-like ${VAR} of config.toml's MCP server is out of the server's block (and so of every command's),
    # and still reaches the MCP server it was configured for
    assert MCP_TOKEN not in own and "MCP_TEST_TOKEN" not in own, shown
    assert f"FAKE_TOKEN={MCP_TOKEN}" in mcp, shown
    if where == "base_url_password":
        assert "THREADLINE_BASE_URL" not in own and "COPY_OF_URL" not in own, shown


async def test_issue28_threadline_acp_drops_the_api_key_env_key_from_its_block(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    config(home, tmp_path / "mcp-pids")
    env = server_env(home, None, XAI_API_KEY=KEY, THREADLINE_BASE_URL=f"http://u:{URL_PASS}@127.0.0.1:9/v1")
    env["THREADLINE_SANDBOX"] = "off"  # the environment must be clean even where commands are not confined
    proc = await start_server(home, "acp", env=env)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        proc.stdin.write((json.dumps(hello) + "\n").encode())
        answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
        assert answer["id"] == 1 and "result" in answer, answer  # the re-executed image is serving
        block = Path(f"/proc/{proc.pid}/environ").read_bytes()  # what `cat /proc/$PPID/environ` reads
    finally:
        proc.kill()
        await proc.wait()
    assert b"THREADLINE_HOME=" in block
    assert KEY.encode() not in block and URL_PASS.encode() not in block and b"XAI_API_KEY" not in block
