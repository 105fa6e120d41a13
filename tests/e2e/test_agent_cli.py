"""``threadline chat`` and ``threadline view``, run as real commands against the fake provider and a temp home."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.cli_support import THREADLINE, env_fixture, fake_fixture, threadline
from tests.e2e.agent_support import model_requests, request_messages
from tests.harness import API_KEY, REPO

fake = fake_fixture()
env = env_fixture()


def test_chat_prints_stream_tools_meter_and_the_end(fake, env, folder):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": "seq 1 20"}}]},
        {"tool_calls": [{"id": "c2", "name": "write_file", "arguments": {"path": "out.txt", "content": "hi"}}]},
        {"content": "Counted and wrote the file.", "chunks": 5},
    )
    run = threadline(env, "chat", "--cwd", str(folder), "--policy", "auto", "count please")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert (folder / "out.txt").read_text() == "hi"
    assert "→ run_command: seq 1 20" in out and "→ write_file: out.txt" in out
    assert "  ✓ 1\n" in out and "    4\n    … 18 more lines\n" in out and "\n    20\n" not in out  # folded
    assert "✓ Created out.txt (2 bytes)" in out
    assert out.count("Counted and wrote the file.") == 1
    meters = re.findall(r"^context (\d+(?:\.\d)?k?)/64k tokens · budget auto · (\d+)% cached$", out, re.M)
    assert len(meters) == 3  # one per model call
    # B-CACHE-5: each call resends the one before it, which the fake provider serves from its cache
    shares = [int(share) for _, share in meters]
    assert shares[0] == 0 and 0 < shares[1] < 100 and 0 < shares[2] < 100
    assert out.rstrip().endswith("— turn ended: endTurn")
    assert API_KEY not in out + run.stderr


def test_chat_without_a_terminal_rejects_approvals_with_a_note(fake, env, folder):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"path": "no.txt", "content": "x"}}]},
        {"content": "ok"},
    )
    run = threadline(env, "chat", "--cwd", str(folder), "--policy", "ask", "write it", stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    assert "approval needed: write_file: no.txt" in run.stdout
    assert "stdin is not a terminal, so this is rejected" in run.stdout
    assert "✗ denied Permission denied" in run.stdout
    assert not (folder / "no.txt").exists()


def test_chat_asks_at_the_terminal_prompt_y_a_n(fake, env, folder):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": "echo once"}}]},
        {"tool_calls": [{"id": "c2", "name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]},
        {"tool_calls": [{"id": "c3", "name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}]},
        {"tool_calls": [{"id": "c4", "name": "run_command", "arguments": {"command": "echo again"}}]},
        {"content": "done"},
    )
    master, slave = pty.openpty()
    try:
        os.write(master, b"y\na\nn\n")  # held by the terminal until the command reads its answers
        run = threadline(env, "chat", "--cwd", str(folder), "--policy", "ask", "do things", stdin=slave)
    finally:
        os.close(slave)
        os.close(master)
    assert run.returncode == 0, run.stderr
    asked = re.findall(r"^approval needed: (.+)$", run.stdout, re.M)
    # c1 once (y), c2 always for write_file (a), c3 not asked, c4 is a command again (n).
    assert asked == ["run_command: echo once", "write_file: a.txt", "run_command: echo again"]
    assert (folder / "a.txt").read_text() == "a" and (folder / "b.txt").read_text() == "b"
    assert "✗ denied Permission denied: the user rejected this run_command call" in run.stdout


def test_chat_without_a_task_reads_tasks_until_eof_in_one_session(fake, env, folder):
    run = threadline(env, "chat", "--cwd", str(folder), "--policy", "auto", stdin="first task\n\nsecond task\n")
    assert run.returncode == 0, run.stderr
    assert "Echo: first task" in run.stdout and "Echo: second task" in run.stdout
    assert run.stdout.count("— turn ended: endTurn") == 2
    second = request_messages(model_requests(fake)[1])
    assert [m["content"] for m in second if m["role"] == "user"] == ["first task", "second task"]


def test_chat_compact_with_a_focus_compacts_the_session_now(fake, env, folder):
    run = threadline(
        env,
        "chat",
        "--cwd",
        str(folder),
        "--policy",
        "auto",
        stdin="/compact\nfirst task\n/compact keep the API decisions\nsecond task\n",
    )
    assert run.returncode == 0, run.stderr
    assert "nothing to compact yet" in run.stdout  # before any message
    assert run.stdout.count("— turn ended: endTurn") == 2
    second = request_messages(model_requests(fake)[1])
    summary = next(m["content"] for m in second if m["role"] == "system" and "Focus:" in m["content"])
    assert "Focus:\nkeep the API decisions" in summary and "- first task" in summary
    assert second[-1] == {"role": "user", "content": "second task"}


def test_chat_turn_error_is_printed_and_exits_nonzero(env, folder):
    env = {k: v for k, v in env.items() if k not in ("THREADLINE_BASE_URL", "THREADLINE_MODEL")}
    run = threadline(env, "chat", "--cwd", str(folder), "hello")
    assert run.returncode == 1
    assert "turn ended: error: no model provider is configured" in run.stdout
    assert "Traceback" not in run.stderr


def imported_session(env: dict[str, str], folder: Path, tmp_path: Path) -> str:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful agent."}]
    for n in range(8):
        messages += [
            {"role": "user", "content": f"step {n}: please run the tests"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": "run_command", "arguments": json.dumps({"command": "pytest"})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{n}", "content": f"run {n}: " + "ok " * 600},
            {"role": "assistant", "content": f"tests pass at step {n}"},
        ]
    path = tmp_path / "session.json"
    path.write_text(json.dumps(messages))
    run = threadline(env, "import", str(path), "--cwd", str(folder))
    assert run.returncode == 0, run.stderr
    return run.stdout.split()[-1]


def test_view_prints_mode_sizes_and_highlights_placeholders_and_the_summary(env, folder, tmp_path):
    sid = imported_session(env, folder, tmp_path)
    full = threadline(env, "view", sid)
    assert full.returncode == 0, full.stderr
    assert full.stdout.startswith("mode full: ") and "(under)" in full.stdout.splitlines()[0]
    assert "33 messages sent, built from 33 stored" in full.stdout

    micro = threadline(env, "view", sid, "--context-window", "5000")
    assert micro.returncode == 0, micro.stderr
    lines = micro.stdout.splitlines()
    assert lines[0].startswith("mode microcompacted: ") and "window 5k" in lines[0]
    placeholders = [ln for ln in lines if "tool [placeholder]" in ln]
    assert placeholders and all("[old tool output compacted" in ln for ln in placeholders)
    assert re.search(rf"{len(placeholders)} tool outputs compacted", lines[1])
    assert lines[2].startswith("budget auto, ")  # B-BUDGET-1: the budget line, then the messages
    assert re.match(r"\s+1 system\s+\d+\s+You are a careful agent\.", lines[3])

    # A window whose threshold sits between the summary view and the microcompacted one (787 tokens), above the
    # tool definitions every request carries: a fixed 1,500 stopped fitting once they reached ~1,450 (the task
    # tool, reserved since 83f8c6a), leaving a threshold of 33 and the fallback. Derived, so new tools keep it.
    reserved = json.loads(threadline(env, "view", sid, "--json").stdout)["reservedTokens"]
    window = reserved + 850  # threshold = floor(850 * 0.8) = 680
    summarized = threadline(env, "view", sid, "--context-window", str(window))
    assert summarized.returncode == 0, summarized.stderr
    out = summarized.stdout
    assert out.startswith("mode summarized: ")
    assert re.search(r"^\s+2 system \*\* SUMMARY \*\*", out, re.M)
    assert "\n== summary ==\n[compressed conversation context]\nOlder transcript messages were summarized." in out

    as_json = threadline(env, "view", sid, "--context-window", str(window), "--json")
    view = json.loads(as_json.stdout)
    assert view["mode"] == "summarized" and view["contextWindowTokens"] == window
    assert view["reservedTokens"] == reserved and view["estimatedTokens"] <= view["thresholdTokens"]
    assert view["summary"].startswith("[compressed conversation context]")
    assert view["transcriptMessages"] == 33


def test_view_of_an_unknown_session_fails_cleanly(env):
    run = threadline(env, "view", "ses_nope")
    assert run.returncode == 1 and run.stderr.startswith("threadline: ") and "Traceback" not in run.stderr


def test_chat_rewind_lists_turns_and_puts_files_back(fake, env, folder):
    """``/rewind`` lists the turns with their files; ``/rewind N dry`` and ``/rewind N`` restore them."""
    (folder / "keep.txt").write_text("original\n")
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"path": "keep.txt", "content": "agent\n"}}]},
        {"tool_calls": [{"id": "c2", "name": "write_file", "arguments": {"path": "new.txt", "content": "n\n"}}]},
        {"content": "Wrote both."},
    )
    run = threadline(
        env, "chat", "--cwd", str(folder), "--policy", "auto", stdin="write files\n/rewind\n/rewind 1 dry\n/rewind 1\n"
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert re.search(r"^  1\. \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  ~keep\.txt, \+new\.txt$", out, re.M), out
    assert "  keep.txt: restored\n  new.txt: removed\n— dry run: nothing changed." in out
    assert "cannot be rewound" in out
    assert (folder / "keep.txt").read_text() == "original\n" and not (folder / "new.txt").exists()


def test_chat_steers_a_running_turn_and_queues_one_after_it(fake, env, folder):
    """At a terminal, a line typed while a turn runs steers it; ``/queue TEXT`` runs TEXT after it."""
    fake.push({"content": "working", "delay": 3}, {"content": "answer"}, {"content": "answer"})
    master, slave = pty.openpty()
    try:  # a terminal (piped input is one task after another); Ctrl-D ends the input
        chat = subprocess.Popen(
            [str(THREADLINE), "chat", "--cwd", str(folder), "--policy", "auto"],
            env=env,
            cwd=REPO,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.write(master, b"start\n")
        # The rest is typed once the first model call is under way (the double holds its answer 3 s), so the
        # line steers a running turn however slowly the machine started the chat and its server.
        deadline = time.monotonic() + 120
        while not model_requests(fake) and time.monotonic() < deadline and chat.poll() is None:
            time.sleep(0.05)
        os.write(master, b"shorter please\n/queue then this\n\x04")
        stdout, stderr = chat.communicate(timeout=120)
    finally:
        os.close(slave)
        os.close(master)
    assert chat.returncode == 0, stderr
    out = stdout
    assert "— steered into the running turn" in out and out.count("— turn ended: endTurn") == 2, out
    chats = model_requests(fake)
    assert [m["content"] for m in request_messages(chats[-1]) if m["role"] == "user"] == [
        "start",
        "shorter please",
        "then this",
    ]
    # The steer reached the first turn (at its first or second model call, as the line arrived); the queued
    # text came after it, as its own turn.
    assert "— /queue" not in out and out.count("session ") == 1


def test_chat_autoEdit_prints_the_applied_diff_and_undo_rewinds_that_edit(fake, env, folder):
    """With policy autoEdit an edit is applied without asking, so its diff is printed after the fact,
    and ``/undo`` rewinds that one edit (``rewindFiles`` with its toolCallId) while an earlier one stays."""
    (folder / "a.txt").write_text("hello\n")
    (folder / "b.txt").write_text("one\n")
    fake.push(
        {
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "edit_file",
                    "arguments": {"path": "b.txt", "old_string": "one", "new_string": "two"},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "id": "c2",
                    "name": "edit_file",
                    "arguments": {"path": "a.txt", "old_string": "hello", "new_string": "bonjour"},
                }
            ]
        },
        {"content": "Edited."},
    )
    run = threadline(env, "chat", "--cwd", str(folder), "--policy", "autoEdit", stdin="edit them\n/undo\n/undo\n")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert (
        "    --- a/a.txt\n    +++ b/a.txt\n    @@ -1 +1 @@\n    -hello\n    +bonjour\n    (/undo rewinds this edit)"
        in out
    )
    assert "  a.txt: restored\n— undid the edit of a.txt." in out and "cannot be rewound" in out
    assert "— no edit to undo in this chat yet" in out, "one /undo per applied edit shown last"
    assert (folder / "a.txt").read_text() == "hello\n" and (folder / "b.txt").read_text() == "two\n"


def test_chat_approval_of_an_edit_shows_its_diff_once(fake, env, folder):
    """Under policy ask the approval's detail is the diff the user reviews; the result does not repeat
    it. Piped input rejects, so the file is unchanged and there is nothing to undo."""
    (folder / "a.txt").write_text("hello\n")
    fake.push(
        {
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "edit_file",
                    "arguments": {"path": "a.txt", "old_string": "hello", "new_string": "bonjour"},
                }
            ]
        },
        {"content": "Ok."},
    )
    run = threadline(env, "chat", "--cwd", str(folder), "--policy", "ask", stdin="edit\n")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "  | -hello\n  | +bonjour" in out and out.count("+bonjour") == 1, out
    assert (folder / "a.txt").read_text() == "hello\n"
