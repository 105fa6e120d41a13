"""Crash safety: SIGKILL the server at many points of a turn, restart it on the same $THREADLINE_HOME.

After every kill: each message the client had been told about is stored whole under its seq (nothing lost or
half-written), the next request view is protocol-valid (R-REP-1 repairs a call left without a result), a partial
answer is kept as ``interrupted``, and a new turn runs to ``endTurn`` against the fake, which rejects any request
that breaks the OpenAI rules.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
from pathlib import Path

import pytest

from tests.harness import closing
from tests.reliability.support import (
    assert_seen_were_stored,
    assert_view_valid,
    sigkill,
    start,
    transcript,
    turn,
    updates,
    wait_for,
)

LONG_ANSWER = " ".join(f"word{i:03d}" for i in range(120))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "a.txt").write_text("contents of a.txt\n")
    return path


async def crash_then_check(home, work, fake, client, sid) -> list[dict]:
    """SIGKILL ``client``'s server, restart, check nothing announced was lost, continue with a new turn."""
    seen = updates(client, sid)
    await sigkill(client)
    fake.reset()
    async with closing(start(home, fake.url)) as again:
        items = await transcript(again, sid)
        assert_seen_were_stored(seen, items)
        assert all(item.get("status", "complete") in ("complete", "interrupted") for item in items)
        await assert_view_valid(again, sid)
        fake.push({"content": "carrying on"})
        result = await turn(again, sid, "continue please")
        assert result["stopReason"] == "endTurn", result
        assert not any(r["rejected"] for r in fake.requests), fake.requests
        after = await transcript(again, sid)
        assert after[: len(items)] == items, "a stored message changed after the restart"
        assert after[-1]["content"] == "carrying on"
        return items


async def test_sigkill_mid_stream_keeps_the_partial_answer_as_interrupted(home, work, fake):
    fake.push({"content": LONG_ANSWER, "chunks": 40, "chunk_delay": 0.05})
    client = await start(home, fake.url)
    sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
    client.start_request("submitTurn", {"sessionId": sid, "text": "talk for a while"})
    await wait_for(lambda: len(updates(client, sid, "assistantDelta")) >= 12, what="a dozen deltas")
    items = await crash_then_check(home, work, fake, client, sid)
    assert [i["role"] for i in items if i["role"] != "system"] == ["user", "assistant"]
    partial = items[-1]
    assert partial["status"] == "interrupted"
    assert partial["content"] and LONG_ANSWER.startswith(partial["content"])
    assert len(partial["content"]) < len(LONG_ANSWER)


async def test_sigkill_mid_tool_run_leaves_a_call_the_view_repairs(home, work, fake):
    fake.push(
        {
            "tool_calls": [
                {
                    "id": "call_sleep",
                    "name": "run_command",
                    "arguments": {"command": "echo started > started.txt; sleep 3"},
                }
            ]
        }
    )
    client = await start(home, fake.url)
    sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
    client.start_request("submitTurn", {"sessionId": sid, "text": "run it"})
    await wait_for(lambda: (work / "started.txt").exists(), what="the command to start")
    items = await crash_then_check(home, work, fake, client, sid)
    assert items[-1]["role"] == "assistant" and items[-1]["toolCalls"][0]["id"] == "call_sleep"
    # R-REP-1: the request after the restart carried a synthetic "interrupted" result for the dangling call
    sent = fake.requests[-1]["body"]["messages"]
    repaired = [m for m in sent if m.get("tool_call_id") == "call_sleep"]
    assert len(repaired) == 1 and "interrupt" in repaired[0]["content"].lower()


async def test_sigkill_between_a_tool_result_and_the_next_call_keeps_the_result(home, work, fake):
    fake.push(
        {"tool_calls": [{"id": "call_read", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"content": "never sent", "delay": 30},
    )
    client = await start(home, fake.url)
    sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
    client.start_request("submitTurn", {"sessionId": sid, "text": "read a.txt"})
    await wait_for(lambda: updates(client, sid, "toolResult"), what="the tool result")
    items = await crash_then_check(home, work, fake, client, sid)
    assert items[-1]["role"] == "tool" and "contents of a.txt" in items[-1]["content"]


async def test_sigkill_mid_artifact_write_leaves_no_half_artifact(home, work, fake):
    size = 12_000_000
    fake.push(
        {
            "tool_calls": [
                {
                    "id": "call_big",
                    "name": "run_command",
                    "arguments": {"command": f"head -c {size} /dev/zero | tr '\\0' x"},
                }
            ]
        },
        {"content": "never sent", "delay": 30},
    )
    client = await start(home, fake.url)
    sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
    folder = home / "artifacts" / sid
    client.start_request("submitTurn", {"sessionId": sid, "text": "make a big output"})
    await wait_for(
        lambda: (folder.exists() and any(folder.iterdir())) or updates(client, sid, "toolResult"),
        what="the artifact write to begin",
    )
    hit = any(p.name.endswith(".partial") for p in folder.iterdir())
    items = await crash_then_check(home, work, fake, client, sid)
    with sqlite3.connect(home / "threadline.db") as db:
        recorded = {Path(p).name: n for p, n in db.execute("SELECT path, total_bytes FROM artifacts")}
    for path in folder.iterdir():
        if path.name.endswith(".txt"):  # a file under a real id is always whole
            assert path.stat().st_size == size
    for name, total in recorded.items():  # and every recorded artifact has its whole file
        assert (folder / name).stat().st_size == total == size
    if hit:  # killed inside the write: the call is left without a result, the view repaired it
        assert items[-1]["role"] == "assistant"


@pytest.mark.parametrize("seed", range(3))
async def test_sigkill_at_random_moments_of_a_busy_turn_loses_nothing(home, work, fake, seed):
    """A turn with streaming text, reads, writes and commands; killed at a random moment (seeded)."""
    rng = random.Random(seed)
    script = [
        {
            "content": "Let me look around. " * 5,
            "chunks": 10,
            "chunk_delay": 0.02,
            "tool_calls": [
                {"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}},
                {"id": "c2", "name": "run_command", "arguments": {"command": "sleep 0.2; ls"}},
            ],
        },
        {
            "tool_calls": [{"id": "c3", "name": "write_file", "arguments": {"path": "b.txt", "content": "bee"}}],
            "chunk_delay": 0.02,
        },
        {
            "content": "Now editing. " * 5,
            "chunks": 10,
            "chunk_delay": 0.02,
            "tool_calls": [
                {
                    "id": "c4",
                    "name": "edit_file",
                    "arguments": {"path": "b.txt", "old_string": "bee", "new_string": "wasp"},
                }
            ],
        },
        {"content": "All done. " * 10, "chunks": 20, "chunk_delay": 0.03},
    ]
    fake.push(*script)
    client = await start(home, fake.url)
    sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
    client.start_request("submitTurn", {"sessionId": sid, "text": "do the busy thing"})
    # The random moment counts from the stored user message (its update follows the commit), not from the request:
    # on a loaded machine the request may not even be read within the first second.
    await wait_for(lambda: updates(client, sid, "userMessage"), timeout=60, what="the user message to be stored")
    started = time.monotonic()
    await asyncio.sleep(rng.uniform(0.0, 1.5))
    killed_after = time.monotonic() - started
    items = await crash_then_check(home, work, fake, client, sid)
    assert any(i["role"] == "user" for i in items), f"killed {killed_after:.2f} s after the user message was stored"


async def test_a_second_server_on_the_same_folder_never_takes_a_live_draft(home, work, fake):
    """Start-up recovery only takes drafts of dead servers: the CLI's server must not cut an editor's turn."""
    fake.push({"content": LONG_ANSWER, "chunks": 24, "chunk_delay": 0.25})
    client = await start(home, fake.url)
    sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
    _, running = client.start_request("submitTurn", {"sessionId": sid, "text": "talk"})
    await wait_for(lambda: len(updates(client, sid, "assistantDelta")) >= 3, what="the draft to be saved")
    second = await start(home, fake.url)  # start-up recovery has run once it answers initialize
    try:
        assert not running.done(), "the turn ended before the second server started; the test proved nothing"
        assert (await asyncio.wait_for(running, 30))["stopReason"] == "endTurn"
        answers = [i for i in await transcript(second, sid) if i["role"] == "assistant"]
        assert [(a["content"], a.get("status", "complete")) for a in answers] == [(LONG_ANSWER, "complete")]
    finally:
        await asyncio.gather(second.close(), client.close())
