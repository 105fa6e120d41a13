"""The sandbox in unattended runs and in ``policy-check`` (B-SBX-1..3): ``threadline exec`` and
``threadline policy-check`` run as real commands, driving a real server (a real SQLite file in a temp home) against
the strict model double; commands run confined on this machine's kernel.

Nobody can approve in an unattended run, so whatever the sandbox makes ask (an escalation, or any command where the
sandbox cannot be enforced) is refused there, and the model reads why; ``[approvals]`` rules never let an
escalation through. ``policy-check`` says the same before anything runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from server.sandbox.runner import support
from tests.cli_support import THREADLINE, command_env, fake_fixture
from tests.e2e.agent_support import events
from tests.e2e.test_exec_e2e import exec_, ndjson, tool_results_sent, updates
from tests.harness import REPO, server_env

pytestmark = pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}")
SANDBOX_KEYS = {"mode", "enforced", "mechanism", "network"}

fake = fake_fixture()


def env_for(fake, home: Path, **extra: str) -> dict[str, str]:
    env = command_env(fake, home, **extra)
    env.pop("THREADLINE_SANDBOX", None)  # the machine enforces it (see pytestmark): the real default applies
    return env


def command(call_id: str, cmd: str, **more: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"command": cmd, **more}}]}


def test_B_SBX_1_exec_sandbox_read_only_makes_a_write_fail_with_the_sandbox_note(fake, home, folder):
    env = env_for(fake, home)
    fake.push(command("c1", "touch made.txt"), {"content": "it failed"})
    args = ("--cwd", str(folder), "--policy", "auto", "--sandbox", "read-only", "--output-format", "stream-json")
    run = exec_(env, *args, "make a file")
    assert run.returncode == 0, run.stderr
    objects = ndjson(run)
    sandbox = objects[0]["sandbox"]
    assert set(sandbox) - {"reason"} == SANDBOX_KEYS
    assert sandbox["mode"] == "read-only" and sandbox["enforced"] is True and sandbox["network"] is False
    assert sandbox["mechanism"] == support().mechanism
    assert [u["status"] for u in updates(objects, "toolResult")] == ["error"]
    assert not (folder / "made.txt").exists()
    (said,) = tool_results_sent(fake)
    assert "[sandbox: this command ran in the read-only sandbox and looks denied" in said
    assert "escalate: true" in said


def test_B_SBX_3_exec_refuses_an_escalation_that_an_approvals_rule_covers_and_says_why(fake, home, folder):
    """The rule allows ``touch ok.txt`` inside the sandbox; asked to run outside, the same command is refused."""
    (home / "config.toml").write_text('[approvals]\ncommands = ["touch ok.txt"]\n')
    env = env_for(fake, home)
    fake.push(
        command("c1", "touch ok.txt", escalate=True, reason="needs my rights"),
        command("c2", "touch ok.txt"),
        {"content": "done"},
    )
    run = exec_(env, "--cwd", str(folder), "--output-format", "stream-json", "go")
    assert run.returncode == 0, run.stderr
    objects = ndjson(run)
    assert [u["status"] for u in updates(objects, "toolResult")] == ["denied", "ok"]
    refused = tool_results_sent(fake)[0]
    assert "unattended run" in refused and "it asks to run outside the sandbox, which always needs approval" in refused
    sid = objects[0]["sessionId"]
    assert events(home, sid, "approvalRequested") == []  # nobody was asked
    assert [d["decision"] for d in events(home, sid, "approvalDecided")] == ["reject"]


def test_B_SBX_3_exec_under_autoedit_runs_a_confined_command_and_refuses_its_escalation(fake, home, folder):
    env = env_for(fake, home)
    fake.push(
        command("c1", "touch inside.txt"),
        command("c2", "touch outside.txt", escalate=True, reason="needs my rights"),
        {"content": "done"},
    )
    run = exec_(env, "--cwd", str(folder), "--policy", "autoEdit", "--output-format", "stream-json", "go")
    assert run.returncode == 0, run.stderr
    assert [u["status"] for u in updates(ndjson(run), "toolResult")] == ["ok", "denied"]
    assert (folder / "inside.txt").exists() and not (folder / "outside.txt").exists()
    refused = tool_results_sent(fake)[1]
    assert "it asks to run outside the sandbox, which always needs approval" in refused
    assert "run_command inside the sandbox run without approval" in refused


def test_B_SBX_2_exec_where_the_sandbox_cannot_be_enforced_refuses_every_command_even_under_auto(fake, home, folder):
    env = env_for(fake, home, THREADLINE_SANDBOX_PROBE="fail")
    fake.push(command("c1", "touch made.txt"), {"content": "refused"})
    run = exec_(env, "--cwd", str(folder), "--policy", "auto", "--output-format", "stream-json", "make a file")
    assert run.returncode == 0, run.stderr
    objects = ndjson(run)
    sandbox = objects[0]["sandbox"]
    assert sandbox["enforced"] is False and "THREADLINE_SANDBOX_PROBE" in sandbox["reason"]
    assert [u["status"] for u in updates(objects, "toolResult")] == ["denied"]
    assert not (folder / "made.txt").exists()
    (said,) = tool_results_sent(fake)
    assert "unattended run" in said and "the sandbox cannot be enforced here" in said
    assert "every command needs approval, under every policy" in said


def _recorded(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    tool_calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)
    ]
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": tool_calls},
        *({"role": "tool", "tool_call_id": f"c{i}", "content": "recorded"} for i in range(len(calls))),
    ]


def policy_check(home: Path, recorded: list[dict[str, Any]], folder: Path, **env: str) -> list[dict[str, Any]]:
    path = home.parent / "session.json"
    path.write_text(json.dumps(recorded))
    run = subprocess.run(
        [str(THREADLINE), "policy-check", str(path), "--cwd", str(folder), "--json"],
        env={k: v for k, v in server_env(home, **env).items() if k != "THREADLINE_SANDBOX"},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return [{k: c[k] for k in ("decision", "by", "reason")} for c in json.loads(run.stdout)["calls"]]


def test_B_SBX_3_policy_check_says_an_escalation_asks_by_the_sandbox_and_a_rule_allows_only_inside(home, folder):
    (home / "config.toml").write_text('[approvals]\ncommand_prefixes = ["make"]\n')
    recorded = _recorded(
        ("run_command", {"command": "make test"}),
        ("run_command", {"command": "make test", "escalate": True, "reason": "needs the network"}),
        ("run_command", {"command": "curl example.com"}),
    )
    calls = policy_check(home, recorded, folder)
    assert [(c["decision"], c["by"]) for c in calls] == [
        ("allow", "approvals rule"),
        ("ask", "sandbox"),
        ("ask", "policy"),
    ]
    assert "'make' with any arguments" in calls[0]["reason"] and "outside the sandbox" in calls[1]["reason"]


def test_B_SBX_2_policy_check_where_the_sandbox_cannot_be_enforced_every_command_asks_by_the_sandbox(home, folder):
    (home / "config.toml").write_text('approval_policy = "auto"\n[approvals]\ncommands = ["make"]\n')
    recorded = _recorded(
        ("run_command", {"command": "make"}),
        ("run_command", {"command": "ls"}),
        ("read_file", {"path": "a.txt"}),
    )
    calls = policy_check(home, recorded, folder, THREADLINE_SANDBOX_PROBE="fail")
    assert [(c["decision"], c["by"]) for c in calls] == [("ask", "sandbox"), ("ask", "sandbox"), ("allow", "policy")]
    assert "cannot be enforced" in calls[0]["reason"]
