"""Background processes are their process groups, and what they print is bounded (SPEC B-WEB-2's processes half,
docs/DESIGN.md "Background processes"): real commands under this machine's sandbox, through the real tools. The
server's side (listProcesses, stopProcess, deleteSession, the daemon's idle exit) is in
``tests/e2e/test_agent_background_groups.py``."""

from __future__ import annotations

import asyncio
import uuid

from server.tools import run_tool
from server.tools import running as bg
from tests.e2e.test_agent_background_processes import marked
from tests.tools.test_background import process_id, with_slot


def escaping(marker: str) -> str:
    """A job that keeps the group and the output pipe while its shell exits at once."""
    return f"(env TL_MARK={marker} sleep 600) & echo started"


async def until(check, what: str) -> None:
    async with asyncio.timeout(60):
        while not check():
            await asyncio.sleep(0.05)


async def ended(ctx, pid: str) -> str:
    """``process_output`` once the process has ended and all it printed has arrived (nothing read before)."""
    process = ctx.background.get(pid)
    await until(lambda: not process.alive() and process.reader.done(), f"{pid} to end")
    return (await run_tool(ctx, "process_output", {"processId": pid})).content


async def test_B_WEB_2_a_job_outliving_its_shell_counts_runs_and_is_stopped(ctx):
    ctx = with_slot(ctx, cap=2)
    marks = [uuid.uuid4().hex for _ in range(3)]
    results = [await run_tool(ctx, "run_command", {"command": escaping(m), "background": True}) for m in marks]
    assert [r.status for r in results] == ["ok", "ok", "error"], [r.content for r in results]
    assert "max_background_processes" in results[2].content
    ids = [process_id(r.content) for r in results[:2]]
    slot = ctx.background
    assert slot is not None
    await until(lambda: all(p.proc.returncode is not None for p in slot.all()), "the shells to exit")
    assert all(marked(m) for m in marks[:2]) and not marked(marks[2])
    assert [p.status for p in slot.all()] == ["running", "running"] and slot.running() == 2
    assert [p.exit_code for p in slot.all()] == [None, None]
    out = await run_tool(ctx, "process_output", {"processId": ids[0]})
    assert out.content.startswith(f"Process {ids[0]} is running\nstarted"), out.content
    stopped = await run_tool(ctx, "stop_process", {"processId": ids[0]})
    assert stopped.content.startswith(f"Process {ids[0]} was stopped"), stopped.content
    assert not marked(marks[0]) and marked(marks[1])
    again = await run_tool(ctx, "run_command", {"command": escaping(marks[2]), "background": True})
    assert again.status == "ok", again.content
    await slot.stop_all()
    assert not any(marked(m) for m in marks) and not slot


async def test_B_WEB_2_a_job_ignoring_TERM_is_killed_after_the_grace(ctx, monkeypatch):
    monkeypatch.setattr(bg, "STOP_GRACE_SECONDS", 0.5)
    ctx = with_slot(ctx)
    mark = uuid.uuid4().hex
    command = f"(trap '' TERM; env TL_MARK={mark} sleep 600) & echo started"
    started = await run_tool(ctx, "run_command", {"command": command, "background": True})
    pid = process_id(started.content)
    process = ctx.background.get(pid)
    await until(lambda: marked(mark) and process.proc.returncode is not None, "the job, its shell gone")
    stopped = await run_tool(ctx, "stop_process", {"processId": pid})
    assert stopped.content.startswith(f"Process {pid} was stopped"), stopped.content
    assert not marked(mark)


async def test_B_WEB_2_unread_output_is_bounded_per_process_and_says_what_was_dropped(ctx):
    ctx, before = with_slot(ctx), bg.UNREAD.total
    command = "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo THE-END"
    pid = process_id((await run_tool(ctx, "run_command", {"command": command, "background": True})).content)
    out = await ended(ctx, pid)
    first, note, text = out.split("\n", 2)
    assert first == f"Process {pid} exited with code 0"
    dropped = 3000000 + len("\nTHE-END\n") - bg.KEEP_UNREAD_BYTES
    assert note == f"[{dropped} earlier bytes dropped: more than {bg.KEEP_UNREAD_BYTES} bytes waited unread]"
    assert text.endswith("x\nTHE-END\n") and len(text) == bg.KEEP_UNREAD_BYTES
    assert bg.UNREAD.total == before


async def test_B_WEB_2_unread_output_is_bounded_over_every_process(ctx, monkeypatch):
    before = bg.UNREAD.total
    monkeypatch.setattr(bg, "TOTAL_UNREAD_BYTES", 1_500_000 + before)
    first, second = with_slot(ctx), with_slot(ctx)  # two sessions' slots: the bound is the server's
    command = "head -c 1000000 /dev/zero | tr '\\0' y; echo; echo DONE"
    a = process_id((await run_tool(first, "run_command", {"command": command, "background": True})).content)
    b = process_id((await run_tool(second, "run_command", {"command": command, "background": True})).content)
    for slot in (first.background, second.background):
        assert slot is not None
        await until(lambda slot=slot: all(p.reader and p.reader.done() for p in slot.all()), "all the output")
    assert bg.UNREAD.total <= 1_500_000 + before
    outs = [await ended(first, a), await ended(second, b)]
    assert any("earlier bytes dropped" in out for out in outs), [out[:120] for out in outs]
    assert all(out.endswith("DONE\n") for out in outs)
    assert bg.UNREAD.total == before


async def test_B_WEB_2_a_job_that_left_the_group_but_holds_the_output_runs_and_is_stopped(ctx):
    """``setsid`` takes the job out of the group; it still holds the output pipe, so the process has not ended, and
    a stop finds it by that pipe."""
    ctx = with_slot(ctx)
    mark = uuid.uuid4().hex
    command = f"setsid env TL_MARK={mark} sleep 600 & echo started"
    pid = process_id((await run_tool(ctx, "run_command", {"command": command, "background": True})).content)
    process = ctx.background.get(pid)
    await until(lambda: marked(mark) and process.proc.returncode is not None, "the job, its shell gone")
    assert process.status == "running"
    stopped = await run_tool(ctx, "stop_process", {"processId": pid})
    assert stopped.content.startswith(f"Process {pid} was stopped"), stopped.content
    assert not marked(mark) and not ctx.background
