"""The context meter, compaction inside and across turns, and what the data folder keeps, end to end.

One scripted session runs once per module on a small window (6,000 tokens, and the fake rejects anything bigger,
as a real provider would): a single turn of twelve commands with ~1,500-token outputs, then five more turns of
longer user text. Then the server exits and the tests read what it produced, including its SQLite file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.e2e.agent_support import (
    API_KEY,
    events,
    new_fake,
    read_db,
    request_messages,
    running_agent,
    tool_messages,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

WINDOW = 8000  # room for the tool definitions (task, update_plan, editor and sandbox arguments) and several compactions
STEPS = 12
LATER_TURNS = 5


def step_command(n: int) -> str:
    return f"python3 -c \"print(''.join('step {n} row %04d ' % i + 'y' * 40 + chr(10) for i in range(100)))\""


@dataclass
class Run:
    home: Path
    stderr: str
    sid: str
    first_turn: dict[str, Any]
    later_turns: list[dict[str, Any]]
    updates: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    transcript: list[dict[str, Any]]
    view: dict[str, Any]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def run(tmp_path_factory) -> Run:
    home = tmp_path_factory.mktemp("home")
    folder = tmp_path_factory.mktemp("ws")
    with new_fake(api_key=API_KEY, context_window=WINDOW) as fake:
        fake.push(
            *[
                {
                    "tool_calls": [
                        {"id": f"call_{n:02d}", "name": "run_command", "arguments": {"command": step_command(n)}}
                    ]
                }
                for n in range(STEPS)
            ],
            {"content": "all steps done"},
        )
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW=str(WINDOW)) as agent:
            sid = await agent.session(folder, policy="auto")
            first = await agent.turn(sid, "run every step", timeout=120)
            later = [
                await agent.turn(sid, f"turn {t}: " + " ".join(f"word{t}_{i}" for i in range(150)))
                for t in range(LATER_TURNS)
            ]
            transcript = await agent.transcript(sid)
            view = await agent.client.request("getContextView", {"sessionId": sid})
            updates = agent.updates(sid)
            requests = agent.chat_requests()
    return Run(home, agent.stderr_path.read_text(), sid, first, later, updates, requests, transcript, view)


def reported_prompt(record: dict[str, Any]) -> int:
    """The prompt size the double reported for a call, in its kind's fields (Anthropic's ``input_tokens`` leaves
    out what was read from or written to the cache, so the prompt is all three)."""
    usage = record["usage"]
    if record["kind"] == "anthropic":
        return usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    if record["kind"] == "openai-responses":
        return usage["input_tokens"]
    return usage["prompt_tokens"]


def turn_slices(updates: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    turns: list[list[dict[str, Any]]] = []
    for u in updates:
        if u["kind"] == "turnStarted":
            turns.append([])
        turns[-1].append(u)
    return turns


async def test_every_turn_ended_and_the_provider_never_rejected_a_request(run):
    assert run.first_turn["stopReason"] == "endTurn"
    assert [t["stopReason"] for t in run.later_turns] == ["endTurn"] * LATER_TURNS
    assert len(run.requests) == STEPS + 1 + LATER_TURNS
    assert [(r["status"], r["rejected"]) for r in run.requests] == [(200, False)] * len(run.requests)


async def test_R_PIPE_2_one_turn_compacts_several_times(run):
    first_turn = turn_slices(run.updates)[0]
    compactions = [u for u in first_turn if u["kind"] == "contextCompacted"]
    assert len(compactions) >= 3
    assert all(c["mode"] == "microcompacted" and c["summary"].startswith("[microcompaction]") for c in compactions)


async def test_B_METER_1_usage_is_the_last_request_size_not_cumulative(run):
    usages = [u for u in run.updates if u["kind"] == "usage"]
    assert len(usages) == len(run.requests)
    # Each double reports the prompt as its own count of that request (see reported_prompt)
    sizes = [reported_prompt(r) for r in run.requests]
    assert [u["contextTokens"] for u in usages] == sizes
    assert all(u["contextWindowTokens"] == WINDOW for u in usages)
    assert all(u["contextTokens"] <= WINDOW for u in usages)
    totals = [u["totals"]["inputTokens"] for u in usages]
    assert totals[-1] == sum(sizes) > WINDOW  # the session total is reported, but separately
    first_turn_requests = STEPS + 1
    assert run.first_turn["usage"]["contextTokens"] == sizes[first_turn_requests - 1]
    assert run.first_turn["usage"]["inputTokens"] == sum(sizes[:first_turn_requests])
    assert run.later_turns[-1]["usage"]["contextTokens"] == sizes[-1]


async def test_R_OBS_1_compaction_updates_carry_before_after_summary_and_the_meter_drops(run):
    compactions = [u for u in run.updates if u["kind"] == "contextCompacted"]
    assert {c["mode"] for c in compactions} == {"microcompacted", "summarized"}
    for c in compactions:
        assert c["afterTokens"] < c["beforeTokens"]
        assert c["summary"].startswith(("[microcompaction]", "[compressed conversation context]"))
    # Each compaction is followed by a request smaller than the uncompacted one it replaced, and the first one
    # makes the meter go down.
    for i, u in enumerate(run.updates):
        if u["kind"] == "contextCompacted":
            after = next(x for x in run.updates[i:] if x["kind"] == "usage")
            assert after["contextTokens"] < u["beforeTokens"]
    first = run.updates.index(compactions[0])
    before = [x for x in run.updates[:first] if x["kind"] == "usage"][-1]
    after = next(x for x in run.updates[first:] if x["kind"] == "usage")
    assert after["contextTokens"] < before["contextTokens"]
    # Persisted too.
    stored = events(run.home, run.sid, "contextCompacted")
    assert [(e["mode"], e["beforeTokens"], e["afterTokens"], e["summary"]) for e in stored] == [
        (c["mode"], c["beforeTokens"], c["afterTokens"], c["summary"]) for c in compactions
    ]


async def test_R_OBS_1_a_compaction_in_a_turn_is_announced_as_starting_before_it_is_made(run):
    """``contextCompacting`` comes before the work of each compaction (so a client can say so instead of "waiting
    for the model"), and its ``contextCompacted`` follows with the same ``beforeTokens``, before the request's
    ``usage``: starting and done pair up one to one, in order."""
    marks = [u for u in run.updates if u["kind"] in ("contextCompacting", "contextCompacted", "usage")]
    compactions = [u for u in marks if u["kind"] == "contextCompacted"]
    assert len(compactions) >= 3
    for i, u in enumerate(marks):
        if u["kind"] == "contextCompacted":
            assert marks[i - 1] == {"kind": "contextCompacting", "trigger": "auto", "beforeTokens": u["beforeTokens"]}
        if u["kind"] == "contextCompacting":
            assert marks[i + 1]["kind"] == "contextCompacted", marks[i : i + 2]
    assert len([u for u in marks if u["kind"] == "contextCompacting"]) == len(compactions)


async def test_R_SRC_2_the_transcript_keeps_every_original_message_after_compaction(run):
    roles = [i["role"] for i in run.transcript if i["role"] != "system"]
    assert roles == ["user"] + ["assistant", "tool"] * STEPS + ["assistant"] + ["user", "assistant"] * LATER_TURNS
    last_view = request_messages(run.requests[-1])
    assert len(last_view) < len(run.transcript)
    # Each tool output is stored exactly as the model first saw it, though later requests compacted it.
    first_seen: dict[str, str] = {}
    for record in run.requests:
        for m in tool_messages(record):
            first_seen.setdefault(m["tool_call_id"], m["content"])
    stored_tools = {i["toolCallId"]: i["content"] for i in run.transcript if i["role"] == "tool"}
    assert stored_tools == first_seen
    assert all(f"step {int(k[5:])} row 0099" in v for k, v in stored_tools.items())
    compacted = [m for m in tool_messages(run.requests[STEPS]) if m["content"].startswith("[old tool output")]
    assert compacted, "the last request of the first turn carries placeholders"
    # The same rows are in the SQLite file the server left behind, unchanged and in order.
    rows = read_db(
        run.home, "SELECT seq, role, content, status FROM messages WHERE session_id = ? ORDER BY seq", run.sid
    )
    assert [(r[0], r[1], r[2]) for r in rows] == [(i["seq"], i["role"], i["content"]) for i in run.transcript]
    assert {r[3] for r in rows} == {"complete"}


async def test_the_api_key_is_nowhere_in_the_data_folder_or_the_logs(run):
    files = [p for p in run.home.rglob("*") if p.is_file()]
    assert any(p.name == "threadline.db" for p in files)
    leaks = [str(p) for p in files if API_KEY.encode() in p.read_bytes()]
    assert leaks == []
    assert run.stderr, "the server logged at DEBUG, so the log is a real check"
    assert API_KEY not in run.stderr
    assert API_KEY not in json.dumps(run.updates) and API_KEY not in json.dumps(run.transcript)


async def test_R_PIPE_3_getContextView_uses_the_loops_budget_with_the_tool_definitions_reserved(run):
    """The view a client inspects is built with the budget the next model call uses: the window less the tool
    definitions every request carries (and the learned calibration), never the bare window."""
    view = run.view
    assert view["contextWindowTokens"] == WINDOW
    assert view["reservedTokens"] > 0
    assert view["thresholdTokens"] <= int((WINDOW - view["reservedTokens"]) * 0.8)
    assert view["mode"] != "full"
    assert view["mode"] == "fallback" or view["estimatedTokens"] <= view["thresholdTokens"]
