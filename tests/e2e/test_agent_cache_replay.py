"""The long-replay check of explicit prompt caching (B-CACHE-1 with Anthropic's breakpoints, B-CACHE-5):
a real recorded session (tests/conftest.py MINI_SWE: one task, 188 model calls) replayed through the real server
and loop against the strict Anthropic double, which caches at the request's ``cache_control`` breakpoints the
way the API does and reports ``cache_read_input_tokens``. Each call's cached share (cache read / all its input)
is printed and, once the sticky prefix holds (from the first compaction on), averages above 80%.

The recording's answers are scripted into the double as they were (text and tool calls, in order). A recorded
call ran the agent's own ``bash``; here each call is a ``read_file`` of a workspace file that holds the recorded
result, so the real tool runs and the request carries the recorded output at its recorded size."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from server.replay import load_recording, plan_replay
from tests.conftest import MINI_SWE
from tests.e2e.agent_support import API_KEY, events, model_requests, request_messages, running_agent
from tests.fakes.fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.asyncio(loop_scope="function")

WINDOW = 32_000
STEADY_SHARE = 0.8


def script_of(recording: Path, workspace: Path) -> tuple[list[str], str, list[dict]]:
    """(system texts, the user's task, the double's script): each recorded result becomes a file to read."""
    plan = plan_replay(load_recording(recording))
    [(task, answers)] = plan.turns  # one task, answered by many model calls
    results = workspace / "results"
    results.mkdir()
    script = []
    for n, answer in enumerate(answers):
        calls = []
        for k, call in enumerate(answer.tool_calls):
            name = f"{n:03}-{k}.txt"
            (results / name).write_text(answer.results.get(call.id) or "(no output)", encoding="utf-8")
            calls.append({"id": f"toolu_{n:03}_{k}", "name": "read_file", "arguments": {"path": f"results/{name}"}})
        script.append({"content": answer.content, **({"tool_calls": calls} if calls else {})})
    if script[-1].get("tool_calls"):
        script.append({"content": "Done."})
    return plan.systems, task, script


def cached_share(usage: dict[str, int]) -> float:
    read, write = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
    return read / (usage["input_tokens"] + read + write)


async def test_B_CACHE_1_a_long_replayed_session_reads_most_of_each_request_from_the_anthropic_cache(tmp_path):
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    (home / "config.toml").write_text("max_iterations = 1000\n")
    systems, task, script = script_of(MINI_SWE, workspace)
    with FakeAnthropic(api_key=API_KEY) as claude:
        claude.push(*script)
        async with running_agent(
            home, claude, THREADLINE_CONTEXT_WINDOW=str(WINDOW), THREADLINE_APPROVAL_POLICY="auto"
        ) as agent:
            created = await agent.client.request(
                "importSession",
                {"cwd": str(workspace), "messages": [{"role": "system", "content": text} for text in systems]},
            )
            sid = created["sessionId"]
            result = await asyncio.wait_for(agent.client.request("submitTurn", {"sessionId": sid, "text": task}), 600)
    assert result["stopReason"] == "endTurn", result
    calls = model_requests(claude)
    assert not any(r["rejected"] for r in calls)
    assert len(calls) == len(script) > 150 and claude.pending == 0

    compactions = events(home, sid, "contextCompacted")
    assert len(compactions) >= 2, "the replay must compact, or the sticky prefix is never tested"
    # The calls from the first compaction on: the one whose request no longer starts as the one before it did
    first_compacted = next(
        i
        for i in range(1, len(calls))
        if request_messages(calls[i])[: len(request_messages(calls[i - 1]))] != request_messages(calls[i - 1])
    )
    shares = [cached_share(r["usage"]) for r in calls]
    print(
        f"\n{MINI_SWE.name} at a {WINDOW:,}-token window through the Anthropic double: {len(calls)} calls, "
        f"{len(compactions)} compactions (first before call {first_compacted + 1})"
    )
    for i, (r, share) in enumerate(zip(calls, shares), 1):
        u = r["usage"]
        print(
            f"call {i:>3}: input {u['input_tokens']:>6,}  cache read {u['cache_read_input_tokens']:>6,}  "
            f"cache write {u['cache_creation_input_tokens']:>6,}  cached {share:6.1%}"
        )
    steady = shares[first_compacted:]
    average = sum(steady) / len(steady)
    print(f"average cached share from the first compaction on: {average:.1%} over {len(steady)} calls")
    assert average > STEADY_SHARE, average

    # B-CACHE-5: what the double reported is what the usage events stored
    stored = events(home, sid, "usage")
    assert [e["cachedInputTokens"] for e in stored] == [r["usage"]["cache_read_input_tokens"] for r in calls]
    assert [e["cacheWriteTokens"] for e in stored] == [r["usage"]["cache_creation_input_tokens"] for r in calls]
