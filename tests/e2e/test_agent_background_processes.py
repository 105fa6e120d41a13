"""Processes never outlive the server (then the attacks of a hostile review): everything a command
starts runs inside the server's PID namespace (``server.sandbox.contain``), which the kernel empties when the
server ends. ``setsid`` (a new session, out of the command's process group), ``env -u TL_RUN_OWNER`` (no reaping
marker) and a SIGKILLed server change nothing. A command's background child runs on while the server lives.

Each attack carries a unique marker in its environment, and the test looks for it in every process's
``/proc/PID/environ`` and ``cmdline``: the pid a command prints is its pid inside the namespace, not ours.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_support import API_KEY, REPO, new_fake, start_agent

pytestmark = pytest.mark.asyncio


def marked(marker: str) -> list[int]:
    """The live (not zombie) processes whose environment or command line holds ``marker``."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes() and needle not in (entry / "cmdline").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def attack(marker: str, escape: str = "") -> str:
    """A command that leaves ``sleep 600`` running in the background, marked, after ``escape`` (``setsid``...)."""
    return f"{escape} env TL_ATTACK={marker} sleep 600 > /dev/null 2>&1 &"


async def wait_none(marker: str) -> None:
    async with asyncio.timeout(30):
        while marked(marker):
            await asyncio.sleep(0.05)


async def start_background_command(tmp_path: Path, fake: Any, command: str, marker: str, sandbox: str | None = None):
    folder = tmp_path / "ws"
    folder.mkdir()
    agent = await start_agent(tmp_path / "home", fake)
    fake.push(
        {"tool_calls": [{"id": "call_bg", "name": "run_command", "arguments": {"command": command}}]},
        {"content": "started it"},
    )
    sid = await agent.session(folder, policy="auto", sandbox=sandbox)
    assert (await agent.turn(sid, "start a server"))["stopReason"] == "endTurn"
    async with asyncio.timeout(30):
        while not marked(marker):
            await asyncio.sleep(0.05)
    return agent


async def test_background_process_of_run_command_is_killed_when_the_server_exits(tmp_path):
    marker = f"bg-{uuid.uuid4().hex}"
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_background_command(tmp_path, fake, f"nohup {attack(marker)}", marker)
        await asyncio.sleep(0.2)
        assert marked(marker), "the background process should run while the server lives"
        assert await agent.client.close() == 0
        await wait_none(marker)


async def test_background_process_of_run_command_is_killed_when_the_server_gets_sigterm(tmp_path):
    marker = f"bg-{uuid.uuid4().hex}"
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_background_command(tmp_path, fake, f"nohup {attack(marker)}", marker)
        agent.client.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(agent.client.proc.wait(), 30) == 128 + signal.SIGTERM
        await wait_none(marker)
        await agent.client.close()


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
async def test_a_setsid_process_is_killed_at_a_normal_shutdown(tmp_path, sandbox):
    """``setsid`` leaves the command's process group, which is all a group kill reaches."""
    marker = f"setsid-{uuid.uuid4().hex}"
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_background_command(tmp_path, fake, attack(marker, "setsid"), marker, sandbox)
        assert await agent.client.close() == 0
        await wait_none(marker)


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
async def test_a_setsid_process_without_the_owner_marker_dies_with_a_sigkilled_server(tmp_path, sandbox):
    """SIGKILL gives the server no chance to clean up, and ``env -u TL_RUN_OWNER`` hides the process from the
    next server's reaping: the namespace's init sees its server end and takes everything with it."""
    marker = f"sigkill-{uuid.uuid4().hex}"
    with new_fake(api_key=API_KEY) as fake:
        command = attack(marker, "setsid env -u TL_RUN_OWNER")
        agent = await start_background_command(tmp_path, fake, command, marker, sandbox)
        agent.client.proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(agent.client.proc.wait(), 30)
        await wait_none(marker)
        await agent.client.close()


async def test_a_live_servers_processes_are_left_alone_by_another_server(tmp_path):
    """A second server on the same data folder reaps orphans at start-up; a live server's commands are not."""
    marker = f"beside-{uuid.uuid4().hex}"
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_background_command(tmp_path, fake, f"nohup {attack(marker)}", marker)
        beside = await start_agent(tmp_path / "home", fake)
        await beside.client.request("listSessions", {})
        await beside.client.close()
        assert marked(marker)
        await agent.client.close()
        await wait_none(marker)


async def test_a_hook_running_when_the_server_is_sigkilled_dies_with_it(tmp_path):
    marker = f"hook-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    home.mkdir()
    # the hook's own process (``exec``) and a child that left its session both carry the marker
    hook = f"setsid env -u TL_RUN_OWNER env TL_ATTACK={marker} sleep 600 > /dev/null 2>&1 & exec env TL_ATTACK={marker} sleep 600"
    (home / "config.toml").write_text(f"[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(hook)}\ntimeout = 600\n")
    folder = tmp_path / "ws"
    folder.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(home, fake)
        sid = await agent.session(folder, policy="auto")
        turn = asyncio.ensure_future(agent.client.request("submitTurn", {"sessionId": sid, "text": "go"}))
        async with asyncio.timeout(30):
            while len(marked(marker)) < 2:
                await asyncio.sleep(0.05)
        agent.client.proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(agent.client.proc.wait(), 30)
        await wait_none(marker)
        turn.cancel()
        await agent.client.close()


async def test_an_mcp_stdio_server_and_what_it_started_die_with_a_sigkilled_server(tmp_path):
    marker = f"mcp-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f"""[mcp_servers.fake]
command = {json.dumps(sys.executable)}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
env = {{ TL_ATTACK = {json.dumps(marker)} }}
"""
    )
    folder = tmp_path / "ws"
    folder.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(home, fake)
        fake.push(
            {"tool_calls": [{"id": "c0", "name": "mcp__fake__echo", "arguments": {"text": "hi"}}]},
            {"content": "done"},
        )
        sid = await agent.session(folder, policy="auto")
        assert (await agent.turn(sid, "go", timeout=60))["stopReason"] == "endTurn"
        assert marked(marker), "the MCP server runs"
        agent.client.proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(agent.client.proc.wait(), 30)
        await wait_none(marker)
        await agent.client.close()
