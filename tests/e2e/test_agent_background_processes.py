"""Issue 12: background processes that ``run_command`` started outlived the server. The command returns while
its background child runs on (in the command's own process group); when the server exits, by ``exit`` or by
SIGTERM, the group is killed."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_support import API_KEY, new_fake, start_agent

pytestmark = pytest.mark.asyncio

BACKGROUND = "nohup sleep 600 > /dev/null 2>&1 & echo $! > bg.pid"


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a killed orphan may wait as a zombie for its reaper


async def start_background_command(tmp_path: Path, fake: Any):
    folder = tmp_path / "ws"
    folder.mkdir()
    agent = await start_agent(tmp_path / "home", fake)
    fake.push(
        {"tool_calls": [{"id": "call_bg", "name": "run_command", "arguments": {"command": BACKGROUND}}]},
        {"content": "started it"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "start a server"))["stopReason"] == "endTurn"
    pid = int((folder / "bg.pid").read_text())
    assert running(pid), "the background process should run while the server lives"
    return agent, pid


async def wait_gone(pid: int) -> None:
    async with asyncio.timeout(30):
        while running(pid):
            await asyncio.sleep(0.05)


async def test_background_process_of_run_command_is_killed_when_the_server_exits(tmp_path):
    with new_fake(api_key=API_KEY) as fake:
        agent, pid = await start_background_command(tmp_path, fake)
        assert await agent.client.close() == 0
        await wait_gone(pid)


async def test_background_process_of_run_command_is_killed_when_the_server_gets_sigterm(tmp_path):
    with new_fake(api_key=API_KEY) as fake:
        agent, pid = await start_background_command(tmp_path, fake)
        agent.client.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(agent.client.proc.wait(), 30) == 128 + signal.SIGTERM
        await wait_gone(pid)
        await agent.client.close()


async def test_background_process_of_a_server_killed_with_sigkill_is_killed_when_a_server_starts_again(tmp_path):
    """SIGKILL gives the server no chance to clean up; the next server on the same data folder does it. A second
    server running beside a live one leaves the live one's processes alone."""
    with new_fake(api_key=API_KEY) as fake:
        agent, pid = await start_background_command(tmp_path, fake)
        beside = await start_agent(tmp_path / "home", fake)  # a live server's commands are not orphans
        await beside.client.request("listSessions", {})
        assert running(pid)
        await beside.client.close()
        agent.client.proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(agent.client.proc.wait(), 30)
        await asyncio.sleep(0.2)
        assert running(pid), "nothing ended it yet: the server that started it was killed"
        again = await start_agent(tmp_path / "home", fake)
        try:
            await wait_gone(pid)
        finally:
            await again.client.close()
            await agent.client.close()
