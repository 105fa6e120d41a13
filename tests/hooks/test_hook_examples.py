"""The README's three hook examples (``docs/hooks/``) through the real server."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from tests.e2e.agent_support import REPO, agent_fixture, tool_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

EXAMPLES = REPO / "docs" / "hooks"


def example(name: str) -> str:
    return shlex.join([sys.executable, str(EXAMPLES / name)])


CONFIG = f"""
[[hooks.PreToolUse]]
matcher = "run_command"
command = {json.dumps(example("block_rm_outside.py"))}

[[hooks.PostToolUse]]
matcher = "edit_file|write_file"
command = {json.dumps(example("ruff_after_edit.py"))}
"""


agent = agent_fixture(config=CONFIG)


def call(call_id: str, tool: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]}


async def test_example_block_rm_outside_the_folder(agent, folder, tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (folder / "build").mkdir()
    agent.fake.push(
        call("call_x1", "run_command", command=f"rm -rf {outside}"),
        call("call_x2", "run_command", command="rm -rf build"),
        {"content": "done"},
    )
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "clean up")
    assert outside.exists() and not (folder / "build").exists()
    first, second = agent.updates(sid, "toolResult")
    assert first["status"] == "denied" and "rm outside the session folder" in first["content"]
    assert second["status"] == "ok"


async def test_example_ruff_after_each_python_edit(agent, folder):
    agent.fake.push(call("call_e1", "write_file", path="bad.py", content="import os\n"), {"content": "written"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "write bad.py")
    [seen] = tool_messages(agent.chat_requests()[-1])
    assert "ruff check bad.py" in seen["content"] and "F401" in seen["content"]


async def test_example_refuse_to_stop_while_pytest_fails(agent, folder):
    agent.fake.reset()
    (folder / "test_calc.py").write_text("def test_add():\n    assert 1 + 1 == 3\n")
    (folder / ".threadline").mkdir()
    (folder / ".threadline" / "hooks.toml").write_text(
        f"[[hooks.Stop]]\ncommand = {json.dumps(example('stop_until_pytest_passes.py'))}\ntimeout = 120\n"
    )
    agent.decide = lambda params: "allowAlways"
    fixed = "def test_add():\n    assert 1 + 1 == 2\n"
    agent.fake.push(
        {"content": "all done"},
        call("call_p1", "write_file", path="test_calc.py", content=fixed),
        {"content": "fixed and done"},
    )
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "make the tests pass", timeout=120)
    assert result["stopReason"] == "endTurn"
    requests = agent.chat_requests()
    assert len(requests) == 3
    told = [u["text"] for u in agent.updates(sid, "userMessage")]
    assert len(told) == 2 and "pytest still fails" in told[1] and "1 failed" in told[1]
