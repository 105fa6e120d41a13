"""The context inspector, plans and project commands in the command-line client, run as real commands against the fake provider and a temp home:
``threadline view --breakdown`` and the chat's ``/context``, ``/plan`` and project commands."""

from __future__ import annotations

import re

from tests.cli_support import env_fixture, fake_fixture, threadline
from tests.e2e.agent_support import model_requests, request_messages
from tests.e2e.test_agent_cli import imported_session

fake = fake_fixture()
env = env_fixture()


def test_view_breakdown_draws_the_parts_of_the_window_and_lists_the_compactions(env, folder, tmp_path):
    sid = imported_session(env, folder, tmp_path)
    run = threadline(env, "view", sid, "--context-window", "5000", "--breakdown")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("context ") and "of 5k tokens" in lines[0] and "view microcompacted" in lines[0]
    assert lines[1].startswith("budget auto"), lines[1]  # B-BUDGET-1: the budget line under the header
    assert re.fullmatch(r"\[S+P*T+M+p+\.*\]", lines[2]) and len(lines[2]) == 62, lines[2]
    names = [ln.split()[1] for ln in lines[3:10]]
    assert names == ["system", "project", "tool", "summary", "messages", "placeholders", "free"]
    assert lines[10] == "0 compactions"


def test_chat_context_plan_and_a_project_command(fake, env, folder):
    commands = folder / ".threadline" / "commands"
    commands.mkdir(parents=True)
    (commands / "fix.md").write_text("---\ndescription: Fix it\n---\nFix $ARGUMENTS now.\n")
    plan = [{"step": "find it", "status": "completed"}, {"step": "fix it", "status": "in_progress"}]
    fake.push({"tool_calls": [{"id": "p1", "name": "update_plan", "arguments": {"plan": plan}}]}, {"content": "fixing"})
    run = threadline(
        env,
        "chat",
        "--cwd",
        str(folder),
        "--policy",
        "auto",
        stdin="/fix the parser\n/context\n/nope\n/plan\n",
    )
    assert run.returncode == 0, run.stderr
    assert request_messages(model_requests(fake)[0])[-1] == {"role": "user", "content": "Fix the parser now."}
    assert len(model_requests(fake)) == 2, "only /fix called the model (twice: the plan, then the answer)"
    assert "plan: 1 of 2 done\n  [x] find it\n  [>] fix it\n" in run.stdout
    assert "Context: about " in run.stdout and "  system prompt" in run.stdout
    said = "unknown command /nope; commands: "
    assert said in run.stdout, run.stdout
    listed = run.stdout.split(said, 1)[1].splitlines()[0].split(", ")
    assert {"/compact", "/context", "/fix", "/plan", "/quit"} <= set(listed), listed  # every command, not 3 of 14
    assert "Plan mode is on" in run.stdout
