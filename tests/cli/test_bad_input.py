"""Bad input to every subcommand, through the installed ``threadline`` (issue 51): one clear line, never a Python
traceback, never a hang, and a non-zero exit.

Each case runs the real command on a fresh home with no provider configured (what a newcomer has); the files it
is given are made in the test's folder. "One line" is counted without argparse's ``usage:`` line, which
argparse prints above its own one-line error.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest

from tests.cli_support import THREADLINE, threadline
from tests.e2e.daemon_support import open_home_fixture
from tests.harness import REPO, server_env

pytestmark = pytest.mark.slow  # some forty real processes

DEMO = REPO / "server" / "cli" / "demo_data" / "kimi-cli-session.json"
NOISE = ("Traceback", "Exception ignored", "never retrieved", "Error:", "  File ")


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return server_env(home)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """The bad inputs a newcomer tried, by name."""
    (tmp_path / "empty.json").write_text("", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("hello, not JSON\n", encoding="utf-8")
    (tmp_path / "wizard.json").write_text(json.dumps([{"role": "wizard", "content": "hi"}]), encoding="utf-8")
    (tmp_path / "folder").mkdir()
    return {
        "MISSING": str(tmp_path / "missing.json"),
        "FOLDER": str(tmp_path / "folder"),
        "NOTJSON": str(tmp_path / "notes.txt"),
        "EMPTY": str(tmp_path / "empty.json"),
        "WIZARD": str(tmp_path / "wizard.json"),
        "DEMO": str(DEMO),
    }


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    """What the command said on stderr, argparse's usage lines left out."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    usage = [i for i, line in enumerate(lines) if line.startswith("usage:")]
    if usage:  # argparse: "usage: ..." (maybe wrapped, indented), then "threadline X: error: ..."
        lines = [line for line in lines[usage[0] :] if "error:" in line] + lines[: usage[0]]
    return lines


def assert_one_clear_line(done: subprocess.CompletedProcess[str], words: str) -> None:
    lines = said(done)
    assert not any(n in done.stderr or n in done.stdout for n in NOISE), done.stderr
    assert done.returncode != 0, (done.returncode, done.stdout, done.stderr)
    assert len(lines) == 1, lines
    assert lines[0].startswith("threadline"), lines
    assert words in lines[0], lines


FILE_COMMANDS = ["import", "policy-check", "replay", "eval"]
FILE_INPUTS = [
    ("MISSING", "no such file"),
    ("FOLDER", "is a folder"),
    ("NOTJSON", "is not JSON"),
    ("EMPTY", "is empty"),
]


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize(("name", "words"), FILE_INPUTS)
def test_B_CLI_1_a_file_that_is_not_a_recording_is_one_line(env, files, command, name, words):
    assert_one_clear_line(threadline(env, command, files[name], timeout=120), words)


CASES = [
    (["replay", "WIZARD"], "role 'wizard'"),
    (["import", "DEMO", "--cwd", "/nope/dir"], "no such folder"),
    (["serve", "--tcp", "--port", "99999"], "not a TCP port"),
    (["serve", "--log-level", "bogus"], "not one of DEBUG"),
    (["acp", "--log-level", "bogus"], "not one of DEBUG"),
    (["daemon", "--log-level", "bogus"], "not one of DEBUG"),
    (["demo", "--context-window", "0"], "positive"),
    (["demo", "--context-window", "-5"], "positive"),
    (["demo", "--out", "FOLDER"], "is a folder"),
    (["replay", "DEMO", "--context-window", "0"], "positive"),
    (["sessions", "--limit", "0"], "above 0"),
    (["search", "x", "--limit", "0"], "above 0"),
    (["view", "ses_nope"], "no session"),
    (["exec", ""], "the task is empty"),
    (["exec", "--policy", "bogus", "hi"], "--policy must be one of"),
    (["exec", "--output-last-message", "/nope/dir/last.txt", "hi"], "does not exist"),
    (["exec", "--output-last-message", "FOLDER", "hi"], "is a folder"),
    (["chat", ""], "the task is empty"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["sandbox"], "usage: threadline sandbox"),
]


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[" ".join(a) or "bare" for a, _ in CASES])
def test_B_CLI_1_bad_arguments_are_one_line(env, files, argv, words):
    args = [files.get(a, a) for a in argv]
    done = threadline(env, *args, timeout=120)
    if words.startswith("usage:"):  # a usage line is the one line this command has for it
        assert done.stderr.strip() == words + " [--mode MODE] -- CMD [ARGS...]"
        assert done.returncode == 2
        return
    assert_one_clear_line(done, words)


@pytest.mark.parametrize("command", [["sessions"], ["search", "x"], ["view", "ses_x"], ["import", "DEMO"]])
def test_B_CLI_1_a_broken_config_toml_is_one_line_naming_the_key(env, home, files, command):
    (home / "config.toml").write_text('[sandbox]\nmdoe = "off"\n', encoding="utf-8")
    done = threadline(env, *[files.get(a, a) for a in command], timeout=120)
    assert_one_clear_line(done, "unknown field mdoe (did you mean mode?)")


def test_B_CLI_1_an_unknown_key_is_a_warning_naming_the_nearest_known_key_once(env, home):
    (home / "config.toml").write_text(
        'approval_polcy = "auto"\n[context]\nthreshold = 0.1\n[provider]\nzzzqqq = 1\n', encoding="utf-8"
    )
    done = threadline(env, "sessions", timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "no sessions yet", done
    assert said(done) == [
        f"threadline: warning: {home / 'config.toml'}: unknown key approval_polcy (did you mean approval_policy?); "
        "it is ignored",
        f"threadline: warning: {home / 'config.toml'}: unknown key provider.zzzqqq; it is ignored",
        f"threadline: warning: {home / 'config.toml'}: unknown key context.threshold "
        "(did you mean context.threshold_ratio?); it is ignored",
    ]


def test_B_CLI_1_version_and_bare_threadline_at_a_terminal_print_what_they_should(env):
    version = threadline(env, "--version")
    assert version.returncode == 0 and version.stdout.startswith("threadline "), version
    primary, secondary = pty.openpty()  # stdin a terminal: a person typed `threadline`
    try:
        bare = subprocess.run(
            [str(THREADLINE)], env=env, stdin=secondary, capture_output=True, text=True, timeout=120, cwd=REPO
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert bare.returncode == 2 and "Traceback" not in bare.stderr
    for command in ("chat", "exec", "sessions", "import", "policy-check", "serve", "connect", "acp", "demo"):
        assert command in bare.stderr, bare.stderr
    piped = threadline(env, stdin="")  # an editor piping into the bare form still gets the stdio server
    assert piped.returncode == 0 and piped.stderr == "", piped


def test_B_CLI_1_a_reader_that_leaves_is_no_traceback(env):
    proc = subprocess.Popen(
        [str(THREADLINE), "sessions"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `threadline sessions | head -0`: nobody reads
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_B_CLI_1_acp_with_stdin_at_dev_null_ends(env):
    done = subprocess.run(
        [str(THREADLINE), "acp"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done


def test_B_CLI_1_chat_leaves_no_empty_session_and_quit_leaves(env):
    assert threadline(env, "chat", stdin=subprocess.DEVNULL).returncode == 0
    no_provider = threadline(env, "chat", "hello")  # the turn fails at once: nothing was said
    assert no_provider.returncode == 1 and "no model provider" in no_provider.stdout
    typed = threadline(env, "chat", stdin="/nope\n/quit\nhello\n")
    assert typed.returncode == 0, typed
    listed = "unknown command /nope; commands: /compact, /rewind, /undo, /model, /sessions, /processes, /stop"
    assert listed in typed.stdout and "/help, /quit" in typed.stdout, typed.stdout
    assert "no model provider" not in typed.stdout  # "hello", after /quit, was never run
    assert threadline(env, "sessions").stdout.strip() == "no sessions yet"


def test_B_CLI_1_policy_check_reads_a_claude_code_recording_as_threadline_tools(env, tmp_path):
    done = threadline(env, "policy-check", str(DEMO), "--cwd", str(tmp_path), "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    tools = {c["tool"] for c in result["calls"]}
    assert {"run_command", "read_file", "edit_file"} <= tools and "Bash" not in tools
    unknown = {c["tool"] for c in result["calls"] if c["by"] == "unknown tool"}
    assert unknown == {"Agent", "AskUserQuestion", "ExitPlanMode", "TaskOutput"}
    assert "read as Threadline's tools: Read -> read_file (30), Bash -> run_command (27)" in done.stderr
    assert "foreign tools, which the live server would refuse as unknown: Agent (2)" in done.stderr


open_home = open_home_fixture()


def test_B_CLI_1_json_lines_through_connect_are_answered_invalid_request_by_the_daemon(open_home):
    """``threadline connect`` relays bytes to the daemon, whose framing answers an unframed JSON line -32600 with
    its id (protocol/README.md), then goes on reading: the framed request after it is answered too."""
    line = json.dumps({"jsonrpc": "2.0", "id": 41, "method": "initialize", "params": {}}).encode() + b"\n"
    body = json.dumps({"jsonrpc": "2.0", "id": 42, "method": "shutdown"}).encode()
    framed = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    done = subprocess.run(
        [str(THREADLINE), "connect"], env=server_env(open_home), input=line + framed, capture_output=True, timeout=120
    )
    answers = framed_messages(done.stdout)
    assert answers[0]["id"] == 41 and answers[0]["error"]["code"] == -32600, answers
    assert "Content-Length" in answers[0]["error"]["message"]
    assert answers[1]["id"] == 42, answers  # still reading


def framed_messages(data: bytes) -> list[dict]:
    """The messages of a Content-Length-framed stream."""
    messages = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head)[1])  # type: ignore[index]
        messages.append(json.loads(data[:length]))
        data = data[length:]
    return messages
