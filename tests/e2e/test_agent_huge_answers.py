""" "No bound on model output": the model double streams a 200 MB tool argument (and, separately, one
200 MB SSE line) to the real server. The answer is stopped at its cap while it streams: the turn ends with a clear
error, nothing of the answer is stored (no call, no interrupted text, no draft), the database stays small, the
server's memory does not follow the answer's size, and the next turn works.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.agent_support import agent_fixture, read_db

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()

HUGE = 200 * 1024 * 1024


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


async def check_nothing_half_stored(agent, sid: str, result: dict, before_kb: int) -> None:
    assert result["stopReason"] == "error", result
    assert result["error"]["code"] == "too_large" and "too large" in result["error"]["message"], result
    assert [item["role"] for item in await agent.transcript(sid) if item["role"] != "system"] == ["user"]
    assert read_db(agent.home, "SELECT count(*) FROM drafts")[0][0] == 0
    assert (agent.home / "threadline.db").stat().st_size < 20 * 1024 * 1024
    assert peak_rss_kb(agent.client.proc.pid) - before_kb < 300_000, "the server held the huge answer"
    agent.fake.reset()
    agent.fake.push({"content": "small again"})
    assert (await agent.turn(sid, "try again", timeout=60))["stopReason"] == "endTurn"


async def test_a_200_MB_tool_argument_is_stopped_while_streaming_and_nothing_is_stored(agent, tmp_path):
    agent.fake.reset()
    agent.fake.push(
        {
            "tool_calls": [
                {"id": "call_big", "name": "write_file", "arguments": {"path": "big.txt", "content": "A" * HUGE}}
            ],
            "arg_chunks": 2000,
        }
    )
    sid = await agent.session(tmp_path, policy="auto")
    before = peak_rss_kb(agent.client.proc.pid)
    result = await agent.turn(sid, "write a big file", timeout=300)
    await check_nothing_half_stored(agent, sid, result, before)
    assert not (tmp_path / "big.txt").exists()


async def test_one_200_MB_stream_line_is_stopped_before_it_is_held_whole(agent, tmp_path):
    agent.fake.reset()
    agent.fake.push({"content": "B" * HUGE, "chunks": 1})  # one delta: a single 200 MB `data:` line
    sid = await agent.session(tmp_path, policy="auto")
    before = peak_rss_kb(agent.client.proc.pid)
    result = await agent.turn(sid, "say a lot", timeout=300)
    await check_nothing_half_stored(agent, sid, result, before)
