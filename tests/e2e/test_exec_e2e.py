"""``threadline exec`` run as a real command, driving a real server (real SQLite file in a temp home)
against the strict model double. Every line it prints in a JSON format is parsed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from typing import Any

import pytest

from server.cli.client import Client
from tests.cli_support import THREADLINE, env_fixture, fake_fixture, threadline
from tests.e2e.agent_support import events, model_requests, read_db, request_messages
from tests.harness import API_KEY, MODEL, REPO

RESULT_KEYS = {"type", "sessionId", "turnId", "stopReason", "isError", "result", "usage", "durationMs", "modelCalls"}
INIT_KEYS = {"type", "sessionId", "cwd", "model", "tools", "approvalPolicy", "sandbox"}
TOTALS_KEYS = {"inputTokens", "outputTokens", "cachedInputTokens", "cacheWriteTokens"}


fake = fake_fixture()
env = env_fixture()


def exec_(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return threadline(env, "exec", *args, stdin=stdin)


def one_result(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """``--output-format json``: stdout is exactly one JSON object, the result."""
    lines = run.stdout.splitlines()
    assert len(lines) == 1, run.stdout
    result = json.loads(lines[0])
    assert set(result) - {"costUsd", "error"} == RESULT_KEYS, result
    assert result["type"] == "result" and set(result["usage"]) >= TOTALS_KEYS
    return result


def ndjson(run: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """``--output-format stream-json``: every line one object; init first, result last, updates between."""
    objects = [json.loads(line) for line in run.stdout.splitlines()]
    assert run.stdout.endswith("\n") and all(run.stdout.splitlines())
    assert objects[0]["type"] == "init" and set(objects[0]) == INIT_KEYS
    assert objects[-1]["type"] == "result" and set(objects[-1]) - {"costUsd", "error"} == RESULT_KEYS
    assert all(o["type"] == "update" and set(o) == {"type", "update"} for o in objects[1:-1])
    return objects


def updates(objects: list[dict[str, Any]], kind: str | None = None) -> list[dict[str, Any]]:
    return [o["update"] for o in objects if o["type"] == "update" and kind in (None, o["update"]["kind"])]


def tool_results_sent(fake) -> list[str]:
    """What the model read back as tool results, in the last request."""
    return [str(m["content"]) for m in request_messages(model_requests(fake)[-1]) if m["role"] == "tool"]


# --- the three formats ------------------------------------------------------------------------------------


def test_text_format_streams_the_answer_to_stdout_and_progress_to_stderr(fake, env, folder):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "list_files", "arguments": {"path": "."}}]},
        {"content": "The folder is empty.", "chunks": 4},
    )
    run = exec_(env, "--cwd", str(folder), "what is here?")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "The folder is empty.\n"  # the answer only
    assert "→ list_files" in run.stderr and "context " in run.stderr and "— endTurn" in run.stderr
    assert API_KEY not in run.stdout + run.stderr


def test_json_format_prints_exactly_one_result_object(fake, env, folder):
    fake.push({"content": "All good."})
    run = exec_(env, "--cwd", str(folder), "--output-format", "json", "check")
    assert run.returncode == 0, run.stderr
    result = one_result(run)
    assert result["stopReason"] == "endTurn" and result["isError"] is False and "error" not in result
    assert result["result"] == "All good." and result["modelCalls"] == 1
    assert result["sessionId"].startswith("ses_") and result["turnId"].startswith("turn_")
    assert result["usage"]["inputTokens"] > 0 and isinstance(result["durationMs"], int)


def test_stream_json_is_init_then_every_update_then_the_result_and_a_tool_call_shows_as_updates(fake, env, folder):
    (folder / "notes.txt").write_text("remember the milk\n")
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"content": "It says to remember the milk."},
    )
    run = exec_(env, "--cwd", str(folder), "--output-format", "stream-json", "read my notes")
    assert run.returncode == 0, run.stderr
    objects = ndjson(run)
    init = objects[0]
    assert init["cwd"] == str(folder.resolve()) and init["model"] == MODEL and init["approvalPolicy"] == "ask"
    assert {"read_file", "run_command", "edit_file"} <= set(init["tools"])
    assert set(init["sandbox"]) - {"reason"} == {"mode", "enforced", "mechanism", "network"}  # B-SBX-2
    kinds = [u["kind"] for u in updates(objects)]
    assert kinds[:2] == ["turnStarted", "userMessage"] and kinds[-1] == "turnCompleted"
    assert kinds.count("usage") == 2
    (call,) = updates(objects, "toolCall")
    (done,) = updates(objects, "toolResult")
    assert call["tool"] == "read_file" and call["arguments"] == {"path": "notes.txt"}
    assert done["toolCallId"] == "c1" and done["status"] == "ok" and "remember the milk" in done["content"]
    result = objects[-1]
    assert result["sessionId"] == init["sessionId"] and result["result"] == "It says to remember the milk."
    assert result["modelCalls"] == 2 and result["usage"] == updates(objects, "usage")[-1]["totals"]


# --- approvals with nobody to ask -------------------------------------------------------------------------


def test_a_command_that_would_ask_is_refused_at_once_and_the_model_reads_why(fake, env, home, folder):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": "touch made.txt"}}]},
        {"tool_calls": [{"id": "c2", "name": "write_file", "arguments": {"path": "w.txt", "content": "x"}}]},
        {"content": "I could not run it: it needs approval."},
    )
    run = exec_(env, "--cwd", str(folder), "--output-format", "stream-json", "make a file")
    assert run.returncode == 0, run.stderr
    objects = ndjson(run)
    denied = updates(objects, "toolResult")
    assert [d["status"] for d in denied] == ["denied", "denied"]
    assert not (folder / "made.txt").exists() and not (folder / "w.txt").exists()
    said = tool_results_sent(fake)
    assert len(said) == 2
    for text in said:
        assert "unattended run" in text and "nobody can approve" in text and "'ask'" in text
        assert "only reading and searching run without approval" in text
    sid = objects[0]["sessionId"]
    assert events(home, sid, "approvalRequested") == []  # nobody was asked
    decided = events(home, sid, "approvalDecided")
    assert [(d["tool"], d["decision"]) for d in decided] == [("run_command", "reject"), ("write_file", "reject")]
    assert all("unattended" in d["note"] for d in decided)


def test_autoedit_lets_edits_through_and_still_refuses_commands_unattended(fake, env, folder):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"path": "w.txt", "content": "x"}}]},
        {"tool_calls": [{"id": "c2", "name": "run_command", "arguments": {"command": "touch made.txt"}}]},
        {"content": "done"},
    )
    # Without a sandbox: a confined command would run under autoEdit (B-SBX-3, tests/sandbox/test_sandbox_exec.py)
    args = ("--cwd", str(folder), "--policy", "autoEdit", "--sandbox", "off", "--output-format", "json")
    run = exec_(env, *args, "go")
    assert run.returncode == 0, run.stderr
    assert (folder / "w.txt").read_text() == "x" and not (folder / "made.txt").exists()
    (said,) = [t for t in tool_results_sent(fake) if t.startswith("Permission denied")]
    assert "'autoEdit'" in said and "file edits inside the session folder run without approval" in said


def test_policy_auto_runs_everything(fake, env, folder):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": "touch made.txt"}}]},
        {"content": "made"},
    )
    run = exec_(env, "--cwd", str(folder), "--policy", "auto", "--output-format", "json", "make a file")
    assert run.returncode == 0, run.stderr
    assert (folder / "made.txt").exists() and one_result(run)["result"] == "made"


def test_approvals_rules_in_config_allow_exact_commands_and_word_prefixes_never_compound(fake, env, home, folder):
    (home / "config.toml").write_text('[approvals]\ncommands = ["touch exact.txt"]\ncommand_prefixes = ["mkdir -p"]\n')
    calls = [
        ("c1", "touch exact.txt"),  # exact rule
        ("c2", "mkdir -p made/deep"),  # prefix rule, with an argument
        ("c3", "touch other.txt"),  # no rule
        ("c4", "mkdir -p ok; touch evil.txt"),  # compound: no rule covers it
        ("c5", "mkdir -pv wordy"),  # a prefix matches whole words only
    ]
    fake.push(
        *({"tool_calls": [{"id": i, "name": "run_command", "arguments": {"command": c}}]} for i, c in calls),
        {"content": "done"},
    )
    run = exec_(env, "--cwd", str(folder), "--output-format", "stream-json", "go")
    assert run.returncode == 0, run.stderr
    statuses = [u["status"] for u in updates(ndjson(run), "toolResult")]
    assert statuses == ["ok", "ok", "denied", "denied", "denied"]
    assert (folder / "exact.txt").exists() and (folder / "made" / "deep").is_dir()
    assert not any((folder / n).exists() for n in ("other.txt", "evil.txt", "ok", "wordy"))
    refused = tool_results_sent(fake)[2]
    assert "[approvals] rules also allow these commands: `touch exact.txt`, `mkdir -p ...`" in refused


async def test_an_always_approval_the_session_remembers_allows_the_call_in_an_unattended_run(fake, env, home, folder):
    """Granted "always" at a person's prompt (a real server and client), then resumed by exec: no one is asked."""
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": "touch granted.txt"}}]},
        {"content": "done"},
    )
    client = await Client.spawn(env=env, cwd=str(REPO))
    try:
        client.on_request = lambda method, params: {"decision": "allowAlways"}
        sid = (await client.request("createSession", {"cwd": str(folder), "approvalPolicy": "ask"}))["sessionId"]
        assert (await client.request("submitTurn", {"sessionId": sid, "text": "make it"}))["stopReason"] == "endTurn"
    finally:
        await client.close()
    (folder / "granted.txt").unlink()
    fake.push(
        {"tool_calls": [{"id": "c2", "name": "run_command", "arguments": {"command": "touch granted.txt"}}]},
        {"content": "made again"},
    )
    run = await asyncio.to_thread(exec_, env, "--resume", sid, "--output-format", "stream-json", "again")
    assert run.returncode == 0, run.stderr
    assert [u["status"] for u in updates(ndjson(run), "toolResult")] == ["ok"]
    assert (folder / "granted.txt").exists()


def test_a_compound_rule_in_config_is_a_configuration_error_exit_2(env, home, folder):
    (home / "config.toml").write_text('[approvals]\ncommand_prefixes = ["npm test && curl x"]\n')
    run = exec_(env, "--cwd", str(folder), "--output-format", "json", "go")
    assert run.returncode == 2 and run.stdout == ""
    assert "approvals.command_prefixes" in run.stderr and "not one simple command" in run.stderr


# --- sessions, input, model, files ------------------------------------------------------------------------


def test_resume_and_continue_carry_on_a_session_and_every_result_names_it(fake, env, folder, tmp_path):
    first = one_result(exec_(env, "--cwd", str(folder), "--output-format", "json", "first task"))
    other = tmp_path / "other"
    other.mkdir()
    one_result(exec_(env, "--cwd", str(other), "--output-format", "json", "elsewhere"))  # newer, another folder
    resumed = one_result(exec_(env, "--resume", first["sessionId"], "--output-format", "json", "second task"))
    assert resumed["sessionId"] == first["sessionId"]
    sent = [m["content"] for m in request_messages(model_requests(fake)[-1]) if m["role"] == "user"]
    assert sent == ["first task", "second task"]
    continued = exec_(env, "--cwd", str(folder), "--continue", "--output-format", "stream-json", "third task")
    objects = ndjson(continued)
    assert objects[0]["sessionId"] == first["sessionId"] and objects[0]["cwd"] == str(folder.resolve())
    sent = [m["content"] for m in request_messages(model_requests(fake)[-1]) if m["role"] == "user"]
    assert sent == ["first task", "second task", "third task"]


def test_task_dash_reads_the_task_from_stdin(fake, env, folder):
    run = exec_(env, "--cwd", str(folder), "--output-format", "json", "-", stdin="a task\nover two lines\n")
    assert run.returncode == 0, run.stderr
    assert request_messages(model_requests(fake)[-1])[-1] == {"role": "user", "content": "a task\nover two lines\n"}


def test_model_picks_a_configured_model_and_an_unknown_one_is_exit_2(fake, env, home, folder):
    (home / "config.toml").write_text('[models.other]\nmodel = "other-model"\ncontext_window_tokens = 32000\n')
    run = exec_(env, "--cwd", str(folder), "--model", "other", "--output-format", "stream-json", "hi")
    assert run.returncode == 0, run.stderr
    assert ndjson(run)[0]["model"] == "other-model"
    assert model_requests(fake)[-1]["body"]["model"] == "other-model"
    unknown = exec_(env, "--cwd", str(folder), "--model", "nope", "--output-format", "json", "hi")
    assert unknown.returncode == 2 and unknown.stdout == "" and "unknown model 'nope'" in unknown.stderr


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_output_last_message_writes_the_final_answer_in_every_format(fake, env, folder, tmp_path, fmt):
    fake.push({"content": "The final answer."})
    target = tmp_path / f"last-{fmt}.txt"
    run = exec_(env, "--cwd", str(folder), "--output-format", fmt, "--output-last-message", str(target), "answer")
    assert run.returncode == 0, run.stderr
    assert target.read_text() == "The final answer.\n"


# --- failures and exit statuses ---------------------------------------------------------------------------


def test_a_provider_failure_is_exit_1_with_is_error_and_still_one_json_object(fake, env, folder):
    bad = {"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error"}}
    fake.push({"error": {"status": 400, "body": bad}})
    run = exec_(env, "--cwd", str(folder), "--output-format", "json", "fail please")
    assert run.returncode == 1, run.stderr
    result = one_result(run)
    assert result["isError"] is True and result["stopReason"] == "error"
    assert result["error"]["code"] == "bad_request" and "temperature" in result["error"]["message"]


def test_an_answer_cut_at_the_output_limit_three_times_is_exit_1_naming_the_limit(fake, env, folder):
    """A runaway answer (a small local model looping) is a failure, not a finished turn."""
    fake.push(*({"content": f"part {n} and on and on", "finish_reason": "length"} for n in range(3)))
    run = exec_(env, "--cwd", str(folder), "--output-format", "json", "write forever")
    assert run.returncode == 1, run.stderr
    result = one_result(run)
    assert result["isError"] is True and result["stopReason"] == "error"
    assert result["error"]["code"] == "outputLimit" and "output limit 3 times" in result["error"]["message"]
    assert result["modelCalls"] == 3


def test_max_model_calls_ends_the_turn_with_exit_1_saying_so(fake, env, folder):
    fake.push(
        *({"tool_calls": [{"id": f"c{n}", "name": "list_files", "arguments": {"path": "."}}]} for n in range(4)),
    )
    run = exec_(env, "--cwd", str(folder), "--max-model-calls", "2", "--output-format", "json", "loop")
    assert run.returncode == 1, run.stderr
    result = one_result(run)
    assert result["stopReason"] == "maxIterations" and result["modelCalls"] == 2
    assert result["error"]["code"] == "maxIterations" and "2 model calls" in result["error"]["message"]
    assert len(model_requests(fake)) == 2


@pytest.mark.parametrize(
    "args, says",
    [
        (["--bogus", "x"], "unrecognized arguments"),
        (["--policy", "yolo", "x"], "--policy must be one of ask, autoEdit, auto, plan"),
        (["--sandbox", "none", "x"], "--sandbox must be one of workspace-write, read-only, off, got 'none'"),
        (["--resume", "ses_1", "--continue", "x"], "not allowed with argument"),
        (["--max-model-calls", "0", "x"], "must be at least 1"),
        (["--output-format", "xml", "x"], "invalid choice"),
        (["-"], "the task is empty (nothing on stdin)"),
        (["--resume", "ses_nope", "x"], "no session 'ses_nope'"),
        (["--cwd", "/nonexistent/folder", "x"], "is not an existing folder"),
    ],
)
def test_bad_usage_is_exit_2_with_a_message_and_nothing_on_stdout(env, folder, args, says):
    run = exec_(env, "--output-format", "json", *args)
    assert run.returncode == 2, run.stderr
    assert run.stdout == "" and says in run.stderr and "Traceback" not in run.stderr


def test_continue_without_a_session_and_a_missing_provider_are_exit_2(env, folder):
    run = exec_(env, "--cwd", str(folder), "--continue", "--output-format", "json", "x")
    assert run.returncode == 2 and run.stdout == "" and "no session in" in run.stderr
    bare = {k: v for k, v in env.items() if k not in ("THREADLINE_BASE_URL", "THREADLINE_MODEL")}
    run = exec_(bare, "--cwd", str(folder), "--output-format", "json", "x")
    assert run.returncode == 2 and run.stdout == "" and "no model provider is configured" in run.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_model_call_cancels_the_turn_exit_130_and_keeps_the_user_message(
    fake, env, home, folder, signum
):
    """A terminal's Ctrl-C goes to the whole process group: sent to the group here, so the server, in its own
    group, is not killed by it and the client cancels the turn cleanly."""
    fake.push({"hang": True})
    proc = subprocess.Popen(
        [str(THREADLINE), "exec", "--cwd", str(folder), "--output-format", "json", "a long question"],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not model_requests(fake) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert model_requests(fake), "the model call never came"
        os.killpg(proc.pid, signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    result = json.loads(out)  # still exactly one object
    assert result["stopReason"] == "cancelled" and result["isError"] is True
    assert result["error"]["code"] == "interrupted" and signum.name in result["error"]["message"]
    stored = read_db(home, "SELECT role, content FROM messages WHERE session_id = ? ORDER BY seq", result["sessionId"])
    assert ("user", "a long question") in stored


def test_issue_33_policy_plan_runs_in_plan_mode_reading_but_refusing_writes(fake, env, folder):
    """With plan mode in this server, ``--policy plan`` is accepted (a server without it refused it): reading
    runs, a write is refused with plan mode's wording and nothing is written."""
    fake.push(
        {"tool_calls": [{"id": "r", "name": "list_files", "arguments": {"path": "."}}]},
        {"tool_calls": [{"id": "w", "name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
        {"content": "Plan: write x.txt."},
    )
    run = exec_(env, "--cwd", str(folder), "--policy", "plan", "--output-format", "json", "plan it")
    assert run.returncode == 0, run.stderr
    assert one_result(run)["stopReason"] == "endTurn"
    assert not (folder / "x.txt").exists()
    assert any("this session is in plan mode" in text for text in tool_results_sent(fake))


@pytest.mark.parametrize("fmt", ["text", "stream-json"])
def test_stdout_closed_early_cancels_the_turn_quietly_exit_1_and_stops_the_server_cleanly(fake, env, home, folder, fmt):
    """``threadline exec ... | head -1``: the reader goes away mid-answer. As Python's docs advise for
    BrokenPipeError (and as ``head`` upstream of a closed pipe would): no traceback, exit 1. The turn is cancelled
    (the model call is dropped, what was said is stored) and the server is shut down, not killed: its lease on the
    data folder is released and no draft is left behind."""
    answer = "first line\n" + "".join(f"line {n}\n" for n in range(2, 40))
    fake.push({"content": answer, "chunks": 40, "chunk_delay": 0.5})
    proc = subprocess.Popen(
        [str(THREADLINE), "exec", "--cwd", str(folder), "--output-format", fmt, "tell me a long story"],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if fmt == "stream-json":  # the init object, then updates until the answer streams
            assert json.loads(first)["type"] == "init"
            while b"assistantDelta" not in first:
                first = proc.stdout.readline()
                assert first, "the answer never streamed"
        else:
            assert first == b"first line\n"
        proc.stdout.close()  # the reader goes away while the answer still streams
        err = proc.stderr.read().decode() if proc.stderr else ""
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
    (record,) = model_requests(fake)
    assert record.get("client_closed"), "the model call went on after the reader left"
    stored = read_db(home, "SELECT role, content FROM messages ORDER BY seq")
    assert ("user", "tell me a long story") in stored
    assert [row for row in stored if row[0] == "assistant" and row[1].startswith("first line")], stored
    assert read_db(home, "SELECT COUNT(*) FROM drafts") == [(0,)]
    assert list((home / "leases").glob("*.lock")) == [], "the server was killed, not shut down"
