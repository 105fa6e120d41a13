"""Slash commands over the real server and the model double: project and user command files (front
matter, ``$ARGUMENTS``), ``listCommands``, the expansion stored beside what the user typed, the built-ins answered
without a model call, ``UnknownCommand``, and text that only looks like a path sent as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.agent_support import agent_fixture, events, request_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()

REVIEW = """---
description: Review a file for bugs
argument-hint: <path> [focus]
---
Review $ARGUMENTS carefully.
List every bug with its line.
"""


@pytest.fixture
def project(agent, tmp_path: Path) -> Path:
    commands = tmp_path / ".threadline" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(REVIEW)
    (commands / "shared.md").write_text("The project's shared prompt.\n")
    (commands / "Bad Name.md").write_text("not a command name: skipped")
    user = agent.home / "commands"
    user.mkdir(exist_ok=True)
    (user / "hello.md").write_text("Say hello to the team.\n")
    (user / "shared.md").write_text("The user's shared prompt.\n")
    agent.fake.reset()
    return tmp_path


def last_user_text(agent) -> str:
    return [m for m in request_messages(agent.chat_requests()[-1]) if m["role"] == "user"][-1]["content"]


async def test_listCommands_lists_project_user_and_builtin_commands(agent, project):
    sid = await agent.session(project)
    by_session = (await agent.client.request("listCommands", {"sessionId": sid}))["commands"]
    assert by_session == [
        {
            "name": "compact",
            "description": by_session[0]["description"],
            "source": "builtin",
            "argumentHint": "[focus]",
        },
        {"name": "context", "description": by_session[1]["description"], "source": "builtin"},
        {"name": "hello", "description": "Say hello to the team.", "source": "user"},
        {"name": "plan", "description": by_session[3]["description"], "source": "builtin"},
        {
            "name": "review",
            "description": "Review a file for bugs",
            "source": "project",
            "argumentHint": "<path> [focus]",
        },
        {"name": "shared", "description": "The project's shared prompt.", "source": "project"},
    ]
    assert (await agent.client.request("listCommands", {"cwd": str(project)}))["commands"] == by_session
    without = (await agent.client.request("listCommands", {}))["commands"]
    assert [(c["name"], c["source"]) for c in without] == [
        ("compact", "builtin"),
        ("context", "builtin"),
        ("hello", "user"),
        ("plan", "builtin"),
        ("shared", "user"),
    ]


async def test_a_command_is_expanded_on_the_server_and_the_store_keeps_both_texts(agent, project):
    sid = await agent.session(project)
    agent.fake.push({"content": "reviewed"})
    typed = "/review src/app.py the parser"
    assert (await agent.turn(sid, typed))["stopReason"] == "endTurn"
    expansion = "Review src/app.py the parser carefully.\nList every bug with its line."
    assert last_user_text(agent) == expansion
    [update] = agent.updates(sid, "userMessage")
    assert update["text"] == expansion and update["typed"] == typed
    [stored] = [i for i in await agent.transcript(sid) if i["role"] == "user"]
    assert stored["content"] == expansion and stored["typed"] == typed
    assert events(agent.home, sid, "commandExpanded") == [{"seq": stored["seq"], "typed": typed}]

    agent.fake.push({"content": "hi"}, {"content": "shared"})
    await agent.turn(sid, "/hello")
    assert last_user_text(agent) == "Say hello to the team."
    await agent.turn(sid, "/shared and more")  # the project's wins; no $ARGUMENTS: appended
    assert last_user_text(agent) == "The project's shared prompt.\n\nand more"


async def test_builtins_answer_without_a_model_call(agent, project):
    sid = await agent.session(project)
    agent.fake.push(*({"content": f"answer {i}: " + "detail " * 300} for i in range(3)))
    for i in range(3):
        await agent.turn(sid, f"goal {i}: " + "x " * 200)
    calls = len(agent.chat_requests())
    context = await agent.turn(sid, "/context")
    assert context["command"]["name"] == "context" and context["command"]["output"].startswith("Context: about ")
    compact = await agent.turn(sid, "/compact keep the goals")
    assert compact["command"]["name"] == "compact" and compact["command"]["output"].startswith("Compacted: about")
    assert events(agent.home, sid, "contextCompacted")[-1]["focus"] == "keep the goals"
    plan = await agent.turn(sid, "/plan")
    assert plan["command"]["name"] == "plan" and "Plan mode is on" in plan["command"]["output"]
    listed = await agent.client.request("listSessions", {"cwd": str(project)})
    assert [s.get("approvalPolicy") for s in listed["sessions"] if s["sessionId"] == sid] == ["plan"]
    assert len(agent.chat_requests()) == calls, "no built-in called the model"
    assert [u for u in agent.updates(sid, "userMessage") if u["text"].startswith("/")] == []


async def test_an_unknown_command_is_UnknownCommand_listing_the_known_ones_and_a_path_is_text(agent, project):
    sid = await agent.session(project)
    with pytest.raises(Exception) as err:
        await agent.turn(sid, "/nope do it")
    assert getattr(err.value, "code", None) == -32602
    data = getattr(err.value, "data", None) or {}
    assert data["code"] == "UnknownCommand"
    assert data["commands"] == ["compact", "context", "hello", "plan", "review", "shared"]
    assert "/review" in str(err.value)
    assert await agent.transcript(sid) == [], "nothing was stored"
    agent.fake.push({"content": "let me check"})
    await agent.turn(sid, "/usr/bin/env is missing")
    assert last_user_text(agent) == "/usr/bin/env is missing"
