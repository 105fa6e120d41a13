"""The README's four hook examples (``docs/hooks/``) through the real server."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.e2e.agent_support import REPO, agent_fixture, tool_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

EXAMPLES = REPO / "docs" / "hooks"


def example(name: str) -> str:
    return shlex.join([sys.executable, str(EXAMPLES / name)])


def audit_log(home: Path) -> Path:
    return home.parent / "audit.log"  # outside every session folder, as a log in the user's home is


CONFIG = f"""
[[hooks.PreToolUse]]
matcher = "run_command"
command = {json.dumps(example("block_rm_outside.py"))}

[[hooks.PostToolUse]]
matcher = "edit_file|write_file"
command = {json.dumps(example("ruff_after_edit.py"))}
"""


def config(home: Path) -> str:
    """``CONFIG`` (which ``test_policy_check`` shares) and the audit hook, with its log beside the home."""
    audit = f"{example('audit_log.py')} {shlex.quote(str(audit_log(home)))}"
    return f'{CONFIG}\n[[hooks.PreToolUse]]\nmatcher = "read_file"\ncommand = {json.dumps(audit)}\nsandbox = false\n'


agent = agent_fixture(config=config)


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


async def test_example_audit_log_outside_the_folder_runs_with_sandbox_false(agent, folder):
    """B-HOOK-2: the audit hook writes outside the folder, so its table says ``sandbox = false``; with it, the call
    goes on and the log has it (without it, tests/sandbox/test_sandbox_procs.py shows what the user reads)."""
    (folder / "a.txt").write_text("alpha\n")
    agent.fake.push(call("call_a1", "read_file", path="a.txt"), {"content": "read"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "read a.txt")
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "ok" and "alpha" in result["content"]
    logged = [json.loads(line) for line in audit_log(agent.home).read_text().splitlines()]
    assert {"session": sid, "tool": "read_file", "input": {"path": "a.txt"}}.items() <= logged[-1].items()


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
