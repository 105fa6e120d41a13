"""B-REC-1: a user message read from a recording is data. ``threadline replay``, ``import``, ``policy-check`` and
``eval`` read a recorded session whose user wrote ``/mode`` and ``/them are the files``; none of them runs a
command, and the text reaches the model as it was written. A live ``/nosuchcommand`` is still ``UnknownCommand``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from server.cli.replay_run import replay_file
from tests.cli_support import THREADLINE
from tests.conftest import KIMI, load_trajectory
from tests.e2e.agent_support import read_db, request_messages, running_agent
from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY, REPO, new_fake, server_env

SLASHED = ["/mode", "/them are the files"]


def _call(call_id: str, name: str, args: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


RECORDING = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "/mode"},
    {"role": "assistant", "content": "There is no /mode command here; what should I do?"},
    {"role": "user", "content": "/them are the files"},
    {"role": "assistant", "content": "", "tool_calls": [_call("c1", "read_file", {"path": "a.txt"})]},
    {"role": "tool", "tool_call_id": "c1", "content": "hello"},
    {"role": "assistant", "content": "", "tool_calls": [_call("c2", "run_command", {"command": "rm -rf /"})]},
    {"role": "tool", "tool_call_id": "c2", "content": "refused"},
    {"role": "assistant", "content": "a.txt says hello."},
]


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "slashes.json"
    path.write_text(json.dumps(RECORDING), encoding="utf-8")
    return path


def _threadline(home: Path, *args: str, fake_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = server_env(home, fake_url)
    return subprocess.run([str(THREADLINE), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=180)


def test_B_REC_1_replay_runs_recorded_slash_text_as_the_users_words(recording, tmp_path):
    out = tmp_path / "requests.jsonl"
    result = _threadline(tmp_path / "home", "replay", str(recording), "--json", "--requests-out", str(out))
    assert result.returncode == 0, result.stderr + result.stdout
    assert "unknown command" not in result.stdout + result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["steps"] == 4  # one answer to /mode, three to the second message (two calls, the end)
    last = json.loads(out.read_text(encoding="utf-8").splitlines()[-1])["messages"]
    assert [m["content"] for m in last if m["role"] == "user"] == SLASHED  # stored and sent as written


def test_B_REC_1_replay_file_reports_no_error_for_a_builtin_name(tmp_path):
    """``/plan`` and ``/compact`` are built-ins: recorded, they are still only text (no mode switch, no compaction)."""
    path = tmp_path / "builtins.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "/plan"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "/compact now"},
                {"role": "assistant", "content": "done"},
            ]
        ),
        encoding="utf-8",
    )
    report = asyncio.run(replay_file(path))
    assert report.errors == []
    assert report.turns == 2 and len(report.steps) == 2
    assert [m["content"] for m in report.transcript if m["role"] == "user"] == ["/plan", "/compact now"]


def test_B_REC_1_import_stores_recorded_slash_text_as_messages(recording, tmp_path):
    home = tmp_path / "home"
    result = _threadline(home, "import", str(recording))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"imported {len(RECORDING)} messages as ses_"), result.stdout
    rows = read_db(home, "SELECT content FROM messages WHERE role = 'user' ORDER BY seq")
    assert [content for (content,) in rows] == SLASHED


def test_B_REC_1_policy_check_reads_recorded_slash_text(recording, tmp_path):
    result = _threadline(tmp_path / "home", "policy-check", str(recording), "--cwd", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    calls = json.loads(result.stdout)["calls"]
    assert [c["tool"] for c in calls] == ["read_file", "run_command"]
    assert calls[0]["decision"] == "allow"


def test_B_REC_1_eval_replays_recorded_slash_text(tmp_path):
    """A long recorded session (it compacts at 8K) that starts with the two slashed messages."""
    messages = load_trajectory(KIMI)
    first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
    extra = [{"role": "user", "content": SLASHED[0]}, {"role": "assistant", "content": "no such mode"}]
    extra += [{"role": "user", "content": SLASHED[1]}, {"role": "assistant", "content": "which files?"}]
    path = tmp_path / "slashed-kimi.json"
    path.write_text(json.dumps(messages[:first_user] + extra + messages[first_user:]), encoding="utf-8")
    with FakeProvider(answer=lambda messages: "I don't know.") as fake:
        args = ["eval", str(path), "--context-window", "8000", "--points", "1", "--strategy", "naive", "--json"]
        result = _threadline(tmp_path / "home", *args, fake_url=fake.url)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["points"], result.stdout


async def test_B_REC_1_a_live_unknown_command_is_still_UnknownCommand_and_literal_text_is_sent(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(tmp_path / "home", fake) as agent:
            sid = await agent.session(folder)
            with pytest.raises(Exception) as err:
                await agent.turn(sid, "/nosuchcommand")
            assert getattr(err.value, "code", None) == -32602
            assert (getattr(err.value, "data", None) or {}).get("code") == "UnknownCommand"
            assert agent.chat_requests() == [], "no model call for an unknown command"
            fake.push({"content": "noted"})
            params = {"sessionId": sid, "text": "/nosuchcommand", "literal": True}
            result = await agent.client.request("submitTurn", params)
            assert result["stopReason"] == "endTurn"
            users = [m for m in request_messages(agent.chat_requests()[-1]) if m["role"] == "user"]
            assert users[-1]["content"] == "/nosuchcommand"
