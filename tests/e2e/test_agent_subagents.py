"""Subagents end to end (B-SUB-1): the ``task`` tool through the real server and the strict model double.

The double answers model calls in the order they arrive, parent's and children's alike: a parent's ``task`` call
waits for its child, so a script reads parent, child..., parent. Parallel children are told apart by their prompts.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.e2e.agent_support import (
    API_KEY,
    agent_fixture,
    fresh_fixture,
    new_fake,
    read_db,
    request_messages,
    running_agent,
    tool_messages,
)
from tests.e2e.agent_support import request_tools as offered

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()

SECRET = "NARWHAL-FILE-CONTENT "


def task(call_id: str, prompt: str, **extra: str) -> dict:
    return {"id": call_id, "name": "task", "arguments": {"description": "look around", "prompt": prompt, **extra}}


def read(call_id: str, path: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "read_file", "arguments": {"path": path}}]}


def command(call_id: str, cmd: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"command": cmd}}]}


def names(record: dict) -> set[str]:
    return {t["function"]["name"] for t in offered(record)}


def children(home, parent: str) -> list[tuple]:
    return read_db(
        home, "SELECT id, parent_tool_call_id FROM sessions WHERE parent_id = ? ORDER BY created_at, id", parent
    )


def child_updates(agent, child: str) -> list[dict]:
    return [p for m, p in agent.client.notifications if m == "sessionUpdate" and p["sessionId"] == child]


fresh = fresh_fixture()


async def test_B_SUB_1_the_parent_gets_the_childs_answer_and_not_what_it_read(agent, folder):
    (folder / "big.txt").write_text(SECRET * 2000)
    answer = "big.txt holds one phrase repeated 2000 times."
    agent.fake.push(
        {"tool_calls": [task("call_task1", "What is in big.txt?")]},
        read("call_r1", "big.txt"),
        {"content": answer},
        {"content": "Thanks, done."},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "explore"))["stopReason"] == "endTurn"

    parent_first, child_first, child_second, parent_second = agent.chat_requests()
    assert "task" in names(parent_first)
    assert "task" not in names(child_first) and "read_file" in names(child_first)  # no recursion
    child_msgs = request_messages(child_first)
    assert child_msgs[-1] == {"role": "user", "content": "What is in big.txt?"}
    assert any("You are a subagent" in (m.get("content") or "") for m in child_msgs if m["role"] == "system")
    assert SECRET in json.dumps(request_messages(child_second))  # the child read it ...
    [result] = tool_messages(parent_second)
    assert result["tool_call_id"] == "call_task1" and result["content"] == answer
    assert SECRET not in json.dumps(parent_second["body"])  # ... the parent never sees it

    [(child, call_id)] = children(agent.home, sid)
    assert call_id == "call_task1"
    updates = child_updates(agent, child)
    assert updates and all(u["parentSessionId"] == sid and u["parentToolCallId"] == "call_task1" for u in updates)
    assert [u["update"]["stopReason"] for u in updates if u["update"]["kind"] == "turnCompleted"] == ["endTurn"]

    listed = (await agent.client.request("listSessions", {"cwd": str(folder)}))["sessions"]
    assert [s["sessionId"] for s in listed] == [sid]
    everything = (await agent.client.request("listSessions", {"cwd": str(folder), "includeChildren": True}))["sessions"]
    [shown] = [s for s in everything if s["sessionId"] == child]
    assert shown["parentSessionId"] == sid and shown["parentToolCallId"] == "call_task1"
    parent_totals = next(s for s in everything if s["sessionId"] == sid)["totals"]
    sent = [r["body"] for r in agent.chat_requests()]
    assert shown["totals"]["inputTokens"] > 0
    # the parent's totals hold its own two calls and its child's two
    usage = read_db(
        agent.home,
        "SELECT session_id, sum(json_extract(payload, '$.inputTokens')) FROM events WHERE kind = 'usage'"
        " GROUP BY session_id",
    )
    per_session = dict(usage)
    assert parent_totals["inputTokens"] == per_session[sid] + per_session[child]
    assert len(sent) == 4


async def test_B_SUB_1_a_childs_approval_reaches_the_client_with_both_ids(agent, folder):
    agent.fake.push(
        {"tool_calls": [task("call_task2", "run echo")]},
        command("call_c", "echo from-the-child"),
        {"content": "it printed from-the-child"},
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="ask")
    assert (await agent.turn(sid, "delegate"))["stopReason"] == "endTurn"
    [(child, _)] = children(agent.home, sid)
    [asked] = agent.approvals
    assert asked["sessionId"] == child and asked["toolCallId"] == "call_c"
    assert asked["parentSessionId"] == sid and asked["parentToolCallId"] == "call_task2"
    [result] = tool_messages(agent.chat_requests()[-1])
    assert result["content"] == "it printed from-the-child"


async def test_B_SUB_1_a_failing_child_is_a_failed_result_and_the_parent_goes_on(agent, folder):
    agent.fake.push(
        {"tool_calls": [task("call_task3", "fail please")]},
        {"error": {"status": 401}},
        {"content": "the subagent failed, I will do it myself"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "delegate"))["stopReason"] == "endTurn"
    [(child, _)] = children(agent.home, sid)
    [result] = tool_messages(agent.chat_requests()[-1])
    assert result["content"].startswith("Tool failed: the subagent failed: auth")
    assert child in result["content"]
    [card] = [u for u in agent.updates(sid, "toolResult") if u["toolCallId"] == "call_task3"]
    assert card["status"] == "error"


async def test_B_SUB_1_cancelling_the_parent_cancels_the_child(agent, folder):
    agent.fake.push({"tool_calls": [task("call_task4", "take forever")]}, {"hang": True})
    sid = await agent.session(folder, policy="auto")
    _, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "delegate"})
    await agent.wait_for(lambda: len(agent.chat_requests()) == 2 and bool(children(agent.home, sid)), 30)
    [(child, _)] = children(agent.home, sid)
    await agent.wait_for(lambda: any(u["update"]["kind"] == "turnStarted" for u in child_updates(agent, child)))
    assert (await agent.client.request("cancelTurn", {"sessionId": sid})) == {"cancelled": True}
    assert (await asyncio.wait_for(fut, 30))["stopReason"] == "cancelled"
    await agent.wait_for(lambda: any(u["update"]["kind"] == "turnCompleted" for u in child_updates(agent, child)))
    [done] = [u["update"] for u in child_updates(agent, child) if u["update"]["kind"] == "turnCompleted"]
    assert done["stopReason"] == "cancelled"
    # the parent's call is closed as interrupted, so its next turn is a valid request
    agent.fake.reset()
    agent.fake.push({"content": "back"})
    assert (await agent.turn(sid, "again"))["stopReason"] == "endTurn"
    [closed] = tool_messages(agent.chat_requests()[-1])
    assert closed["tool_call_id"] == "call_task4" and "interrupted" in closed["content"]


async def test_B_SUB_1_task_calls_in_one_answer_run_together(agent, folder):
    # Each child's command waits for the other's file: they finish only if both run at once.
    wait = "touch {mine}; for i in $(seq 400); do [ -f {theirs} ] && exit 0; sleep 0.05; done; exit 1"
    agent.fake.push(
        {"tool_calls": [task("call_p1", "child one"), task("call_p2", "child two")]},
        command("call_x1", wait.format(mine="a", theirs="b")),
        command("call_x2", wait.format(mine="b", theirs="a")),
        {"content": "report"},
        {"content": "report"},
        {"content": "both done"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "two things", timeout=60))["stopReason"] == "endTurn"
    results = tool_messages(agent.chat_requests()[-1])
    assert sorted(r["tool_call_id"] for r in results) == ["call_p1", "call_p2"]
    assert all(r["content"] == "report" for r in results)
    commands = [m for r in agent.chat_requests()[3:5] for m in tool_messages(r)]
    assert all(m["content"].startswith("Exit code: 0") or "exit code 0" in m["content"].lower() for m in commands), [
        m["content"] for m in commands
    ]


async def test_B_SUB_1_max_parallel_runs_one_child_at_a_time(tmp_path, folder):
    home = tmp_path / "home-serial"
    home.mkdir()
    (home / "config.toml").write_text("[agents]\nmax_parallel = 1\n")
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as serial:
            fake.push(
                {"tool_calls": [task("call_s1", "first child"), task("call_s2", "second child")]},
                {"content": "one"},
                {"content": "two"},
                {"content": "done"},
            )
            sid = await serial.session(folder, policy="auto")
            assert (await serial.turn(sid, "go", timeout=60))["stopReason"] == "endTurn"
            prompts = [request_messages(r)[-1]["content"] for r in serial.chat_requests()[1:3]]
            assert prompts == ["first child", "second child"]
            # the first child had its answer before the second child's first call
            [first, second] = children(home, sid)
            assert {first[1], second[1]} == {"call_s1", "call_s2"}


async def test_B_SUB_1_a_named_agent_restricts_tools_and_adds_instructions(agent, folder):
    agents = folder / ".threadline" / "agents"
    agents.mkdir(parents=True)
    (agents / "scout.md").write_text(
        "---\ndescription: Finds files fast\ntools: read_file, list_files\n---\nAlways answer in one line.\n"
    )
    agent.fake.push(
        {"tool_calls": [task("call_task5", "find the readme", agent="scout")]},
        {"content": "README.md"},
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "delegate"))["stopReason"] == "endTurn"
    parent_first, child_first, _ = agent.chat_requests()
    [spec] = [t for t in offered(parent_first) if t["function"]["name"] == "task"]
    assert "- scout: Finds files fast" in spec["function"]["description"]
    assert names(child_first) == {"read_file", "list_files"}
    systems = [m["content"] for m in request_messages(child_first) if m["role"] == "system"]
    assert any("Always answer in one line." in s for s in systems)

    agent.fake.reset()
    agent.fake.push({"tool_calls": [task("call_task6", "x", agent="nobody")]}, {"content": "ok"})
    await agent.turn(sid, "unknown agent")
    [result] = [m for m in tool_messages(agent.chat_requests()[-1]) if m["tool_call_id"] == "call_task6"]
    assert result["content"].startswith("Tool failed: Invalid arguments: no agent 'nobody'; available: scout")


async def test_B_SUB_1_getContextView_reserves_the_task_tool_as_the_loop_sends_it(agent, folder):
    agent.fake.push({"tool_calls": [task("call_task7", "say hi")]}, {"content": "hi"}, {"content": "ok"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "delegate")
    [(child, _)] = children(agent.home, sid)
    parent_view = await agent.client.request("getContextView", {"sessionId": sid})
    child_view = await agent.client.request("getContextView", {"sessionId": child})
    [spec] = [t for t in offered(agent.chat_requests()[0]) if t["function"]["name"] == "task"]
    assert parent_view["reservedTokens"] - child_view["reservedTokens"] == pytest.approx(
        len(json.dumps(spec)) / 4, rel=0.3
    )


async def test_B_SUB_1_deleting_the_parent_deletes_its_children(agent, folder):
    agent.fake.push({"tool_calls": [task("call_task8", "say hi")]}, {"content": "hi"}, {"content": "ok"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "delegate")
    [(child, _)] = children(agent.home, sid)
    await agent.client.request("deleteSession", {"sessionId": sid})
    assert read_db(agent.home, "SELECT count(*) FROM sessions WHERE id IN (?, ?)", sid, child) == [(0,)]
    assert read_db(agent.home, "SELECT count(*) FROM messages WHERE session_id = ?", child) == [(0,)]


async def test_B_SUB_1_a_child_cancelled_on_its_own_is_a_failed_result_and_the_parent_goes_on(agent, folder):
    agent.fake.push({"tool_calls": [task("call_task9", "take forever")]}, {"hang": True}, {"content": "fine"})
    sid = await agent.session(folder, policy="auto")
    _, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "delegate"})
    await agent.wait_for(lambda: len(agent.chat_requests()) == 2 and bool(children(agent.home, sid)), 30)
    [(child, _)] = children(agent.home, sid)
    await agent.wait_for(lambda: any(u["update"]["kind"] == "turnStarted" for u in child_updates(agent, child)))
    assert (await agent.client.request("cancelTurn", {"sessionId": child})) == {"cancelled": True}
    assert (await asyncio.wait_for(fut, 30))["stopReason"] == "endTurn"
    [result] = tool_messages(agent.chat_requests()[-1])
    assert result["content"] == f"Tool failed: the subagent was cancelled before it finished (subagent session {child})"


async def test_B_SUB_1_a_long_answer_reaches_the_parent_as_an_artifact_with_a_preview(agent, folder):
    long_answer = "".join(f"finding {n}: something in file_{n}.py\n" for n in range(3000))  # > 50 KB
    agent.fake.push(
        {"tool_calls": [task("call_task10", "list everything")]}, {"content": long_answer}, {"content": "ok"}
    )
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "delegate")
    [result] = tool_messages(agent.chat_requests()[-1])
    assert len(result["content"]) < len(long_answer) and "[artifact artifact-" in result["content"]
    [card] = [u for u in agent.updates(sid, "toolResult") if u["toolCallId"] == "call_task10"]
    page = await agent.client.request(
        "readArtifact", {"sessionId": sid, "artifactId": card["artifactId"], "lineRange": {"start": 2999, "end": 3000}}
    )
    assert page["content"] == "finding 2998: something in file_2998.py\nfinding 2999: something in file_2999.py"
