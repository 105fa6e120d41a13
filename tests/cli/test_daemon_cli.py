"""The terminal's side of the daemon (B-DAEMON-1, docs/DAEMON.md), as a user runs it: ``threadline exec --detach``
starts a long task and exits at once, ``threadline sessions`` shows it waiting, ``threadline chat --attach`` shows
what happened and the rest live, Ctrl-C detaches without cancelling; the approval is answered from another client.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from typing import Any

import pytest

from tests.cli_support import THREADLINE, command_env, threadline
from tests.e2e.daemon_support import (
    bridge,
    fake_fixture,
    listed,
    open_home_fixture,
    wait_until,
    write_call,
)
from tests.harness import REPO

pytestmark = pytest.mark.asyncio
open_home = open_home_fixture()
fake = fake_fixture()


def _attach(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """``chat --attach`` piped; its stderr goes to the daemon's home log (read with ``rest``)."""
    return subprocess.Popen(
        [str(THREADLINE), "chat", "--attach", *args],
        env=env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _rest(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    """What it prints after the lines already read, to its end (read from the same buffered stream)."""
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait(timeout)
    return out


async def test_B_DAEMON_1_exec_detach_then_attach_and_answer_the_waiting_approval(open_home, fake, folder):
    home = open_home
    env = command_env(fake, home)
    fake.push(write_call("call_w", "report.txt", "ready\n"), {"content": "report written"})
    started = time.monotonic()
    detached = await asyncio.to_thread(threadline, env, "exec", "--detach", "--cwd", str(folder), "write the report")
    assert detached.returncode == 0, detached.stderr
    assert "never retrieved" not in detached.stderr, detached.stderr  # the pending answer is let go quietly
    sid = detached.stdout.strip()
    assert sid.startswith("ses_") and "\n" not in sid
    assert time.monotonic() - started < 120  # it did not wait for the approval

    answerer = await bridge(env, home)
    try:
        await wait_until(lambda: _waiting(answerer, sid), what="the approval waiting")
        shown = await asyncio.to_thread(threadline, env, "sessions")
        line = next(line for line in shown.stdout.splitlines() if line.startswith(sid))
        assert " waiting " in line, shown.stdout

        watching = _attach(env, sid)  # piped: it watches, and leaves the question to a client that answers
        assert watching.stdout is not None
        first = await asyncio.to_thread(watching.stdout.readline)
        assert first.startswith(f"attached to session {sid}: waiting for your approval"), first
        answerer.on_request = lambda method, params: {"decision": "allowOnce"}
        await answerer.request("attachSession", {"sessionId": sid})
        out = await asyncio.to_thread(_rest, watching)
        assert watching.returncode == 0, out
        assert "write_file" in out and "report written" in out
        assert (folder / "report.txt").read_text() == "ready\n"
    finally:
        await answerer.close()


async def _waiting(client: Any, sid: str) -> bool:
    return bool((await listed(client, sid))["waitingForApproval"])


async def test_ctrl_c_detaches_the_attached_chat_without_cancelling(open_home, fake, folder):
    home = open_home
    env = command_env(fake, home)
    fake.push({"content": "still going " * 40, "chunks": 40, "chunk_delay": 0.5})
    detached = await asyncio.to_thread(threadline, env, "exec", "--detach", "--cwd", str(folder), "keep going")
    sid = detached.stdout.strip()
    watching = _attach(env)  # no SESSION: the running one
    try:
        assert watching.stdout is not None
        first = await asyncio.to_thread(watching.stdout.readline)
        assert first.startswith(f"attached to session {sid}: running"), first
        watching.send_signal(signal.SIGINT)
        out = await asyncio.to_thread(_rest, watching)
        assert watching.returncode == 0, out
        assert f"detached from {sid}" in out
    finally:
        if watching.poll() is None:
            watching.kill()
    checker = await bridge(env, home)
    try:
        assert (await listed(checker, sid))["running"], "Ctrl-C cancelled the turn"
        await wait_until(lambda: _ended(checker, sid), timeout=60, what="the turn's end")
        items = (await checker.request("readTranscript", {"sessionId": sid}))["items"]
        assert items[-1]["status"] == "complete" and items[-1]["content"].startswith("still going")
    finally:
        await checker.close()


async def _ended(client: Any, sid: str) -> bool:
    return not (await listed(client, sid))["running"]
