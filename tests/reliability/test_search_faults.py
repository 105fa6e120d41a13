"""Robustness: a FIFO in the folder never blocks ``search_files``/``list_files``, and a search worker
never outlives its server (``kill -9`` of the server during a search), against a real server process."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from tests.e2e.agent_support import API_KEY, new_fake, running_agent, start_agent

pytestmark = pytest.mark.asyncio(loop_scope="function")


def call(call_id: str, tool: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]}


def workers_of(server: int) -> list[int]:
    """Pattern processes descending from ``server`` (the fork server and the workers it forked), by /proc."""
    parents: dict[int, int] = {}
    patterns = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), 0
        )
        if b"server.patterns" in cmdline:
            patterns.add(int(entry.name))

    def descends(pid: int) -> bool:
        for _ in range(10):
            pid = parents.get(pid, 0)
            if pid == server:
                return True
        return False

    return sorted(p for p in patterns if descends(p))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_issue28_a_fifo_in_the_folder_never_blocks_a_search_or_a_listing(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text("the needle is here\n")
    os.mkfifo(work / "pipe.txt")
    (work / "sub").mkdir()
    os.mkfifo(work / "sub" / ".gitignore")  # even an ignore file that is a FIFO is never opened
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake, THREADLINE_PATTERN_TIMEOUT="30") as agent:
            sid = await agent.session(work, policy="auto")
            fake.push(
                call("c1", "search_files", pattern="needle"),
                call("c2", "list_files"),
                {"content": "ok"},
            )
            assert (await agent.turn(sid, "find it", timeout=120))["stopReason"] == "endTurn"
            search, listing = [u["content"] for u in agent.updates(sid, "toolResult")]
    assert "notes.txt:1: the needle is here" in search and "stopped after" not in search, search
    assert "notes.txt" in listing and "pipe.txt" not in listing and "stopped after" not in listing, listing


async def test_issue28_a_search_worker_dies_with_a_server_killed_mid_search(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "slow.txt").write_text("a" * 5000 + "b\n")  # (a+)+$ backtracks for far longer than the test
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(home, fake, THREADLINE_PATTERN_TIMEOUT="600")
        server = agent.client.proc
        try:
            sid = await agent.session(work, policy="auto")
            fake.push(call("c1", "search_files", pattern="(a+)+$"), {"content": "ok"})
            turn = asyncio.ensure_future(agent.turn(sid, "search", timeout=600))
            await agent.wait_for(lambda: bool(agent.updates(sid, "toolCall")), timeout=60)
            async with asyncio.timeout(60):  # the fork server and the worker it forked for this search
                while len(workers := workers_of(server.pid)) < 2:
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)  # well inside the match
            assert all(alive(w) for w in workers)
            os.kill(server.pid, signal.SIGKILL)
            await server.wait()
            turn.cancel()
            async with asyncio.timeout(30):  # generous: the kernel delivers the parent-death signal at once
                while any(alive(w) for w in workers):
                    await asyncio.sleep(0.05)
        finally:
            if server.returncode is None:
                server.kill()
            await server.wait()
