"""The walk-away flow as a newcomer meets it (B-DAEMON-1, docs/DAEMON.md), through the installed ``threadline``
command and the real daemon it starts: ``exec --detach`` a task, nobody attached while it runs, ``chat --attach``
shows what it did; an attached chat that outlives its daemon leaves; a turn that cannot run is refused before
anything is detached; a broken config.toml is one line from every command; approvals across two clients.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.screen import Terminal
from tests.cli_support import THREADLINE, command_env, threadline
from tests.e2e.daemon_support import (
    bridge,
    daemon_pid,
    fake_fixture,
    listed,
    open_home_fixture,
    wait_gone,
    wait_until,
    write_call,
)
from tests.harness import API_KEY, REPO, new_fake

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]
open_home = open_home_fixture()
fake = fake_fixture()


def _piped(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(THREADLINE), *args],
        env=env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _command(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": "call_c", "name": "run_command", "arguments": {"command": command}}]}


async def _ended(client: Any, sid: str) -> bool:
    return not (await listed(client, sid))["running"]


async def _detach(env: dict[str, str], folder: Path, task: str, *flags: str) -> str:
    done = await asyncio.to_thread(threadline, env, "exec", "--detach", "--cwd", str(folder), *flags, task)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


async def test_B_DAEMON_1_walk_away_exec_detach_finishes_unattended_then_attach_shows_what_it_did(
    open_home, fake, folder
):
    env = command_env(fake, open_home, THREADLINE_SANDBOX="off")
    fake.push(_command("echo walked-away"), {"content": "All done: the command printed walked-away."})
    sid = await _detach(env, folder, "run echo and tell me", "--policy", "auto")
    checker = await bridge(env, open_home)
    try:
        await wait_until(lambda: _ended(checker, sid), timeout=120, what="the detached turn's end")
    finally:
        await checker.close()

    attached = await asyncio.to_thread(threadline, env, "chat", "--attach", sid, stdin=subprocess.DEVNULL)
    assert attached.returncode == 0, attached.stderr
    lines = attached.stdout.splitlines()
    assert lines[0].startswith(f"attached to session {sid}: idle"), attached.stdout
    assert "last turn: run echo and tell me" in lines
    assert "→ run_command: echo walked-away  (ok)" in lines, attached.stdout
    assert lines[lines.index("final answer:") + 1] == "All done: the command printed walked-away."
    assert "Traceback" not in attached.stderr


async def test_B_DAEMON_1_attach_with_no_id_offers_the_most_recent_finished_sessions(open_home, fake, folder):
    env = command_env(fake, open_home, THREADLINE_SANDBOX="off")
    fake.push({"content": "first answer"})
    sid = await _detach(env, folder, "the first task")
    checker = await bridge(env, open_home)
    try:
        await wait_until(lambda: _ended(checker, sid), timeout=120, what="the turn's end")
    finally:
        await checker.close()
    piped = await asyncio.to_thread(threadline, env, "chat", "--attach", stdin=subprocess.DEVNULL)
    assert piped.returncode == 2
    assert f"1. {sid}" in piped.stderr and "chat --attach SESSION" in piped.stderr, piped.stderr

    term = Terminal(["chat", "--attach"], env)
    try:
        term.wait_for_text("attach to which?")
        term.type("\r")  # Enter: the most recent
        term.wait_for_text("final answer:")
        assert "first answer" in term.text()
        term.type("/detach\r")
        assert term.proc.wait(timeout=90) == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()


async def test_B_DAEMON_1_an_attached_chat_leaves_when_its_daemon_dies(open_home, fake, folder):
    env = command_env(fake, open_home)
    fake.push({"content": "slow " * 200, "chunks": 200, "chunk_delay": 0.5})
    sid = await _detach(env, folder, "take your time")
    watching = _piped(env, "chat", "--attach", sid)
    term = Terminal(["chat", "--attach", sid], env)
    try:
        assert watching.stdout is not None
        first = await asyncio.to_thread(watching.stdout.readline)
        assert first.startswith(f"attached to session {sid}: running"), first
        term.wait_for_text(f"attached to session {sid}: running")
        pid = daemon_pid(open_home)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert wait_gone(pid)
        out, err = await asyncio.to_thread(watching.communicate, timeout=90)
        assert watching.returncode == 1, (out, err)
        assert "the daemon went away" in err and f"threadline chat --attach {sid}" in err, err
        assert "Traceback" not in err
        term.wait_for_text("the daemon went away")
        term.type("\x03")  # Ctrl-C after: nothing waits on the dead connection
        # 1 as it leaves on its own; a Ctrl-C that lands while it is already leaving ends it as Ctrl-C ends Python
        assert term.proc.wait(timeout=90) in (1, -signal.SIGINT)
        assert f"attach again with threadline chat --attach {sid}" in term.text().replace("\n", "")
    finally:
        for proc in (watching, term.proc):
            if proc.poll() is None:
                proc.kill()


async def test_B_DAEMON_1_exec_detach_refuses_what_a_plain_exec_refuses(open_home, fake, folder):
    env = command_env(fake, open_home)
    bare = {k: v for k, v in env.items() if k not in ("THREADLINE_BASE_URL", "THREADLINE_MODEL")}
    for args, said in (
        ((), "no model provider is configured"),
        (("--cwd", str(folder / "missing")), "no such folder"),
        (("--model", "nope"), "--model nope"),
    ):
        given = bare if not args else env
        done = await asyncio.to_thread(threadline, given, "exec", "--detach", *args, "do it")
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stdout == "" and said in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    # a key the provider refuses fails at once: reported as a plain exec reports it, never as a session id
    refused = await asyncio.to_thread(
        threadline, {**env, "THREADLINE_API_KEY": "wrong"}, "exec", "--detach", "--cwd", str(folder), "do it"
    )
    assert refused.returncode == 1 and refused.stdout == "", (refused.stdout, refused.stderr)
    assert "the turn failed" in refused.stderr and "Traceback" not in refused.stderr


async def test_B_DAEMON_1_exec_detach_runs_on_the_asking_shells_provider(open_home, fake, folder):
    env = command_env(fake, open_home)
    checker = await bridge(env, open_home)  # the daemon starts with this shell's provider
    try:
        with new_fake(api_key=API_KEY) as other:
            other.push({"content": "answered by the other provider"})
            sid = await _detach({**env, "THREADLINE_BASE_URL": other.url}, folder, "which provider?")
            await wait_until(lambda: _ended(checker, sid), timeout=120, what="the turn's end")
            assert other.requests, "the detached turn did not use the asking shell's THREADLINE_BASE_URL"
        assert not fake.requests
        items = (await checker.request("readTranscript", {"sessionId": sid}))["items"]
        assert items[-1]["content"] == "answered by the other provider"
    finally:
        await checker.close()


@pytest.mark.parametrize(
    "args",
    [
        ("exec", "--detach", "hi"),
        ("exec", "hi"),
        ("sessions",),
        ("search", "x"),
        ("view", "ses_x"),
        ("chat", "--attach"),
        ("chat", "hi"),
    ],
)
async def test_B_DAEMON_1_a_broken_config_is_one_line_from_every_command(open_home, fake, args):
    env = command_env(fake, open_home)
    (open_home / "config.toml").write_text("[provider\n")
    done = await asyncio.to_thread(threadline, env, *args, stdin=subprocess.DEVNULL, timeout=30)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(open_home / "config.toml") in done.stderr and "line 1" in done.stderr, done.stderr
    assert daemon_pid(open_home) is None  # nothing was left restarting


async def test_B_DAEMON_1_connect_reports_a_daemon_that_cannot_start_once(open_home, fake):
    env = command_env(fake, open_home)
    (open_home / "config.toml").write_text("[provider\n")
    started = time.monotonic()
    done = await asyncio.to_thread(threadline, env, "connect", stdin=subprocess.DEVNULL, timeout=50)
    assert done.returncode == 2 and "line 1" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert time.monotonic() - started < 50  # not the minute of restarts


async def test_B_DAEMON_1_attached_turns_end_as_local_ones(open_home, fake, folder):
    env = command_env(fake, open_home)
    fake.push({"content": "first " * 20, "chunks": 20, "chunk_delay": 0.3})
    sid = await _detach(env, folder, "start")
    watching = _piped(env, "chat", "--attach", sid)
    out, err = await asyncio.to_thread(watching.communicate, timeout=120)
    assert watching.returncode == 0, err
    assert "— turn ended: endTurn" in out.splitlines(), out

    fake.push({"content": "second answer"})
    term = Terminal(["chat", "--attach", sid], env)
    try:
        term.wait_for_text(f"attached to session {sid}: idle")
        term.type("go on\r")  # a line typed at an idle session starts a turn
        term.wait_for(lambda screen: "second answer" in screen and "✓ done · " in screen, "the turn's end")
        term.type("/detach\r")
        assert term.proc.wait(timeout=90) == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()


async def test_B_DAEMON_1_attach_to_a_waiting_approval_shows_history_then_the_question(open_home, fake, folder):
    env = command_env(fake, open_home)
    fake.push(
        {"content": "Writing the notes now.", **write_call("call_w", "notes.txt", "noted\n")}, {"content": "written"}
    )
    sid = await _detach(env, folder, "write the notes")
    checker = await bridge(env, open_home)
    try:
        await wait_until(lambda: _waiting(checker, sid), timeout=120, what="the approval")
    finally:
        await checker.close()
    term = Terminal(["chat", "--attach", sid], env)
    try:
        term.wait_for_text("allow?")
        screen = term.text()
        assert screen.index("waiting for your approval") < screen.index("approval needed")
        assert screen.index("→ write_file") < screen.index("approval needed"), screen
        assert screen.rstrip().splitlines()[-1].startswith("allow?"), screen
        term.type("y\r")
        term.wait_for(lambda s: "✓ done" in s, "the turn's end")
        assert (folder / "notes.txt").read_text() == "noted\n"
        term.type("/detach\r")
        assert term.proc.wait(timeout=90) == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()


async def _waiting(client: Any, sid: str) -> bool:
    return bool((await listed(client, sid))["waitingForApproval"])


async def test_B_DAEMON_1_an_approval_answered_elsewhere_is_withdrawn_and_input_goes_on(open_home, fake, folder):
    env = command_env(fake, open_home)
    fake.push(write_call("call_w", "shared.txt", "both\n"), {"content": "first turn done"})
    sid = await _detach(env, folder, "write it")
    term = Terminal(["chat", "--attach", sid], env)
    answerer = await bridge(env, open_home)
    try:
        term.wait_for_text("allow?")
        answerer.on_request = lambda method, params: {"decision": "allowOnce"}
        await answerer.request("attachSession", {"sessionId": sid})
        term.wait_for_text("answered in another client: allowed")
        term.wait_for_text("✓ done")
        fake.push({"content": "the next line was read"})
        term.type("and then?\r")  # not swallowed by a prompt nobody sees any more
        term.wait_for_text("the next line was read")
        assert any("and then?" in str(r) for r in fake.requests[-1:]), fake.requests[-1]
        term.type("/detach\r")
        assert term.proc.wait(timeout=90) == 0
    finally:
        await answerer.close()
        if term.proc.poll() is None:
            term.proc.kill()


async def test_exec_reports_a_provider_that_accepts_and_does_not_answer_while_it_waits(open_home, fake, folder):
    env = command_env(fake, open_home)
    fake.push({"delay": 35, "content": "late, but here"})
    done = await asyncio.to_thread(threadline, env, "exec", "--cwd", str(folder), "answer slowly", timeout=180)
    assert done.returncode == 0, done.stderr
    assert "late, but here" in done.stdout
    waits = [line for line in done.stderr.splitlines() if "still waiting for the model" in line]
    assert waits and "no answer for 30 s" in waits[0] and "THREADLINE_READ_TIMEOUT" in waits[0], done.stderr


async def test_chat_status_line_counts_the_wait_for_a_silent_provider(open_home, fake, folder):
    env = command_env(fake, open_home)
    fake.push({"delay": 8, "content": "at last"})
    term = Terminal(["chat", "--cwd", str(folder), "answer slowly"], env)
    try:
        term.wait_for(lambda s: [n for n in term.numbers(r"waiting for the model · (\d+) s") if n >= 3], "the wait")
        term.wait_for_text("at last")
        assert term.proc.wait(timeout=90) == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()


@pytest.mark.parametrize("args", [("exec", "--detach", "hi"), ("chat", "--attach"), ("connect",)])
async def test_B_DAEMON_1_a_daemon_that_fails_at_its_start_is_said_once_in_one_line(open_home, fake, args):
    env = command_env(fake, open_home)
    (open_home / "daemon").write_text("not a folder")  # the daemon cannot make its private folder
    done = await asyncio.to_thread(threadline, env, *args, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "could not start" in done.stderr and str(open_home / "daemon") in done.stderr, done.stderr
