"""``threadline chat`` at a real terminal (a pseudo-terminal read by pyte) and piped.

At a terminal the answer is rendered markdown, tools are coloured lines, an approval is a framed panel, a live
status line says what is being waited for with a clock that advances, and a turn ends in plain words. Piped, the
output is the plain text scripts read, with no escape codes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.screen import Terminal
from tests.cli_support import env_fixture, fake_fixture, threadline
from tests.e2e.agent_support import model_requests, request_messages
from tests.harness import API_KEY, REPO, kind_of, new_fake, server_env

MARKDOWN = (
    "Use **--verbose** for `details`.\n\n"
    "## Steps\n\n"
    "- first *item*\n"
    "- second item\n\n"
    "```python\n"
    "def greet():\n"
    "    return 'hi'\n"
    "```\n\n"
    "See [the docs](https://example.com/docs).\n"
)


fake = fake_fixture()
env = env_fixture()


@pytest.fixture
def terminals():
    started: list[Terminal] = []
    yield started
    for t in started:
        if t.proc.poll() is None:
            t.close()


def chat_at_terminal(terminals: list[Terminal], env: dict[str, str], *args: str) -> Terminal:
    t = Terminal(["chat", *args], env)
    terminals.append(t)
    t.wait_for(lambda screen: screen.endswith("\n>"), "the prompt")  # the session is open, the prompt waits
    return t


def test_issue_38_markdown_is_rendered_at_a_terminal(fake, env, folder, terminals):
    fake.push({"content": MARKDOWN, "chunks": 7})
    t = chat_at_terminal(terminals, env, "--cwd", str(folder), "--policy", "auto")
    t.type("explain\n")
    t.wait_for_text("✓ done")
    screen = t.text()
    assert "Use --verbose for details." in screen, screen
    assert "**" not in screen and "`" not in screen and "##" not in screen, screen  # nothing raw
    assert "• first item" in screen and "• second item" in screen
    assert "def greet():" in screen and "return 'hi'" in screen
    assert t.cell("--verbose").bold and not t.cell("Use").bold
    heading = t.cell("Steps")
    assert heading.bold or heading.underscore or heading.fg != "default"  # a heading is set apart
    assert t.cell("item").italics
    assert t.cell("def").fg != "default"  # syntax highlighted
    assert t.close() == 0


def test_issue_38_the_status_line_advances_while_the_model_has_not_answered(fake, env, folder, terminals):
    fake.push({"content": "Here it is.", "delay": 4})
    t = chat_at_terminal(terminals, env, "--cwd", str(folder), "--policy", "auto")
    t.type("slow one\n")
    pattern = r"waiting for the model · (\d+) s"
    first = t.wait_for(lambda _: t.numbers(pattern), "the waiting status line")
    assert isinstance(first, list)
    t.wait_for(lambda _: any(n > first[0] for n in t.numbers(pattern)), "the status line's clock advance")
    t.wait_for_text("✓ done")
    screen = t.text()
    assert "Here it is." in screen and "waiting for the model" not in screen  # replaced by the answer
    assert t.close() == 0


def test_issue_38_the_status_line_names_a_running_command_and_advances(fake, env, folder, terminals):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": "sleep 4; echo slept"}}]},
        {"content": "Slept."},
    )
    t = chat_at_terminal(terminals, env, "--cwd", str(folder), "--policy", "auto")
    t.type("sleep please\n")
    pattern = r"running: sleep 4; echo slept · (\d+) s"
    first = t.wait_for(lambda _: t.numbers(pattern), "the running status line")
    assert isinstance(first, list)
    t.wait_for(lambda _: any(n > first[0] for n in t.numbers(pattern)), "the running clock advance")
    t.wait_for_text("✓ done")
    screen = t.text()
    assert "→ run_command: sleep 4; echo slept" in screen and "✓ slept" in screen
    assert t.cell("✓ slept").fg == "green"
    assert "running:" not in screen
    # the meter stays in the status line while the answer streams; at the end it is a dim line of its own
    assert re.search(r"context \d+(\.\d)?k?/64k tokens", screen)
    assert t.close() == 0


def test_issue_38_approval_is_a_panel_and_long_outputs_fold_with_a_count(fake, env, folder, terminals):
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": "seq 1 30"}}]},
        {"content": "Counted."},
    )
    t = chat_at_terminal(terminals, env, "--cwd", str(folder), "--policy", "ask")
    t.type("count\n")
    t.wait_for_text("allow? [y] once, [a] always, [n] reject:")
    screen = t.text()
    assert re.search(r"╭─+ ?approval needed: run_command: seq 1 30", screen), screen
    assert "│ seq 1 30" in screen
    t.type("y\n")
    t.wait_for_text("✓ done")
    screen = t.text()
    assert "✓ 1\n" in screen and re.search(r"^    … \d+ more lines$", screen, re.M) and "\n    30" not in screen
    assert t.close() == 0


def test_issue_38_failures_say_what_happened_and_what_to_do(env, folder, terminals, tmp_path):
    closed = server_env(tmp_path / "home", "http://127.0.0.1:9/v1", THREADLINE_PROVIDER="openai")
    t = chat_at_terminal(terminals, closed, "--cwd", str(folder), "--policy", "auto")
    t.type("hello\n")
    t.wait_for_text("✗ failed:")
    t.wait_for_text("must point at it")
    screen = t.text()
    assert "127.0.0.1:9" in screen  # which URL failed
    assert "THREADLINE_BASE_URL" in screen
    assert t.close() == 1


def test_issue_38_piped_output_has_no_escape_codes_and_the_stable_end_line(fake, env, folder):
    fake.push({"content": MARKDOWN, "chunks": 4})
    run = threadline(env, "chat", "--cwd", str(folder), "--policy", "auto", stdin="explain\n/help\n")
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout + run.stderr
    assert "**--verbose**" in run.stdout  # as the model wrote it: logs keep the text
    assert "— turn ended: endTurn" in run.stdout
    assert "/model NAME switches" in run.stdout  # /help


def test_issue_38_a_piped_chat_does_not_import_rich():
    code = "import importlib, sys; importlib.import_module('server.cli.main')._parser(); print('rich' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_issue_38_continue_and_resume_pick_up_a_session(fake, env, folder):
    first = threadline(env, "chat", "--cwd", str(folder), "--policy", "auto", stdin="first task\n")
    assert first.returncode == 0, first.stderr
    sid = re.search(r"^session (ses_\S+) in ", first.stdout, re.M)
    assert sid, first.stdout
    again = threadline(env, "chat", "--cwd", str(folder), "--continue", stdin="second task\n")
    assert again.returncode == 0, again.stderr
    assert f"resumed session {sid[1]} in {folder}" in again.stdout
    assert "  last you: first task\n  last agent: Echo: first task\n" in again.stdout  # where it stopped
    resumed = threadline(env, "chat", "--resume", sid[1], stdin="third task\n/sessions\n")
    assert resumed.returncode == 0, resumed.stderr
    last = request_messages(model_requests(fake)[-1])
    assert [m["content"] for m in last if m["role"] == "user"] == ["first task", "second task", "third task"]
    assert re.search(rf"^  \* {sid[1]} .+ \d+ msgs  first task$", resumed.stdout, re.M), resumed.stdout  # /sessions


def test_issue_38_bad_flags_are_refused_with_what_to_do(env, folder):
    unknown = threadline(env, "chat", "--resume", "ses_nope", stdin="hi\n")
    assert unknown.returncode == 2 and "threadline sessions" in unknown.stderr, unknown.stderr
    nothing = threadline(env, "chat", "--cwd", str(folder), "--continue", stdin="hi\n")
    assert nothing.returncode == 2 and f"no session in {folder} yet" in nothing.stderr
    model = threadline(env, "chat", "--cwd", str(folder), "--model", "nope", stdin="hi\n")
    assert model.returncode == 2 and "nope" in model.stderr and "--model takes a [models.NAME]" in model.stderr
    policy = threadline(env, "chat", "--cwd", str(folder), "--policy", "yolo", stdin="hi\n")
    assert policy.returncode == 2 and "--policy must be one of ask, autoEdit, auto" in policy.stderr
    for run in (unknown, nothing, model, policy):
        assert "Traceback" not in run.stderr and run.stdout == ""


def test_issue_38_sandbox_flag_goes_to_the_server_or_says_it_cannot(env, folder):
    run = threadline(env, "chat", "--cwd", str(folder), "--sandbox", "read-only", stdin="hi\n")
    from protocol.sessions import CreateSessionParams

    if "sandbox" in CreateSessionParams.__struct_fields__:  # a server with sandboxes: the mode is the session's
        assert run.returncode == 0, run.stderr
        assert "sandbox" in run.stdout
    else:
        assert run.returncode == 2 and "--sandbox needs the OS sandbox" in run.stderr, run.stderr


def test_issue_38_model_switches_with_the_flag_and_the_slash_command(fake, env, folder):
    home = Path(env["THREADLINE_HOME"])
    (home / "config.toml").write_text(
        '[models.small]\nmodel = "small-chat"\ncontext_window_tokens = 9000\n\n'
        '[models.big]\nmodel = "big-chat"\ncontext_window_tokens = 64000\n'
    )
    run = threadline(
        env,
        "chat",
        "--cwd",
        str(folder),
        "--model",
        "small",
        "--policy",
        "auto",
        stdin="one\n/model\n/model big\ntwo\n",
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "  * small  small-chat (openai, 9,000 tokens)\n    big  big-chat" in out, out
    assert "— model big: big-chat (openai), a 64,000-token window, from the next call" in out
    assert [r["body"]["model"] for r in model_requests(fake)] == ["small-chat", "big-chat"]
    wrong = threadline(env, "chat", "--cwd", str(folder), stdin="/model nope\n")
    assert "configured: small, big" in wrong.stdout, wrong.stdout


def test_issue_38_steering_and_ctrl_c_at_a_terminal(fake, env, folder, terminals):
    fake.push({"content": "first answer", "delay": 3}, {"content": "shorter answer"}, {"content": "x", "delay": 60})
    t = chat_at_terminal(terminals, env, "--cwd", str(folder), "--policy", "auto")
    t.type("start\n")
    t.wait_for_text("waiting for the model")
    t.type("shorter please\n")  # typed while the turn runs: it steers it (or, if it just ended, runs after it)
    t.wait_for_text("shorter answer")
    t.wait_for(lambda _: len(model_requests(fake)) == 2 and t.text().endswith("\n>"), "the prompt again")
    assert "» shorter please" in t.text()  # what was typed stays on the screen, the status line went
    assert not re.search(r"· \d+ sshorter", t.text())
    t.type("again\n")
    t.wait_for(lambda _: len(model_requests(fake)) == 3, "the third model call")
    t.type("\x03")  # Ctrl-C at the terminal: the chat cancels the turn, its server (own process group) goes on
    t.wait_for_text("■ cancelled")
    assert t.close() == 0
    said = [m["content"] for m in request_messages(model_requests(fake)[-1]) if m["role"] == "user"]
    assert said[:2] == ["start", "shorter please"]


def test_issue_38_a_missing_key_says_which_variable_to_set(folder, tmp_path):
    with new_fake(api_key=API_KEY) as keyed:
        env = server_env(tmp_path / "home", keyed.url, THREADLINE_PROVIDER=kind_of(keyed))
        env.pop("THREADLINE_API_KEY")
        run = threadline(env, "chat", "--cwd", str(folder), "hello")
    assert run.returncode == 1
    assert "— turn ended: error: " in run.stdout and "requires an API key" in run.stdout, run.stdout
    assert "  → set THREADLINE_API_KEY" in run.stdout


def test_a_compaction_inside_a_turn_shows_as_compacting_not_as_waiting_for_the_model(fake, env, folder, terminals):
    """The server says a compaction started (``contextCompacting``) before its work: here a ``PreCompact`` hook
    that takes seconds, which the status line used to show as "waiting for the model"."""
    home = Path(env["THREADLINE_HOME"])
    (home / "config.toml").write_text('[[hooks.PreCompact]]\ncommand = "sleep 4"\ntimeout = 30\n')
    (folder / "big.txt").write_text("".join(f"line {n}: " + "words " * 12 + "\n" for n in range(300)))
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "big.txt"}}]},
        {"content": "Read it all."},
    )
    t = chat_at_terminal(terminals, {**env, "THREADLINE_CONTEXT_WINDOW": "6000"}, "--cwd", str(folder))
    t.type("read big.txt\n")
    pattern = r"compacting · (\d+) s"
    first = t.wait_for(lambda _: t.numbers(pattern), "the compacting status line")
    assert isinstance(first, list)
    assert "waiting for the model" not in t.text()
    t.wait_for(lambda _: any(n > first[0] for n in t.numbers(pattern)), "the compacting clock advance")
    t.wait_for_text("✓ done")
    screen = t.text()
    assert "context compacted (" in screen and "Read it all." in screen
    assert "compacting ·" not in screen  # replaced once the compaction was done
    assert t.close() == 0


def test_chat_lists_the_background_processes_and_stops_one(fake, env, folder):
    fake.push(
        {
            "tool_calls": [
                {"id": "c1", "name": "run_command", "arguments": {"command": "sleep 600", "background": True}}
            ]
        },
        {"content": "Started."},
    )
    run = threadline(
        env, "chat", "--cwd", str(folder), "--policy", "auto", stdin="start it\n/processes\n/stop bg-nope\n"
    )
    assert run.returncode == 0, run.stderr
    listed = re.search(r"^  (bg-\w+)  pid (\d+)  running\s+sleep 600$", run.stdout, re.M)
    assert listed, run.stdout
    assert "— 1 running: /stop ID stops one" in run.stdout
    assert "no background process 'bg-nope'" in run.stdout
    for _ in range(600):  # the chat's server ended, and its processes with it
        if not Path(f"/proc/{listed[2]}").exists() or "State:\tZ" in Path(f"/proc/{listed[2]}/status").read_text():
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"process {listed[2]} outlived the chat's server")


def test_B_SBX_3_an_escalation_offers_no_always_at_the_terminal(fake, env, folder, terminals):
    """An escalated command runs unconfined and no scope could be remembered for it: the request offers once or
    reject only, and the chat prompt offers exactly those (``a`` is not taken as an answer)."""
    escalate = {"command": "echo unconfined", "escalate": True, "reason": "needs the network"}
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": escalate}]},
        {"content": "Not run then."},
    )
    t = chat_at_terminal(terminals, env, "--cwd", str(folder), "--policy", "ask")
    t.type("go\n")
    t.wait_for_text("allow? [y] once, [n] reject:")
    assert "[a] always" not in t.text()
    t.type("a\n")  # not offered: the prompt asks again
    t.wait_for(lambda screen: screen.count("allow? [y] once, [n] reject:") >= 2, "the prompt again")
    t.type("n\n")
    t.wait_for_text("Not run then.")
    assert t.close() == 0
