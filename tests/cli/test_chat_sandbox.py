"""``threadline chat`` says the session's sandbox beside its policy (B-SBX-1/2) and marks an approval that would run
a command outside it (B-SBX-3); the chat against the real server prints what createSession reported."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from server.cli.chat import Printer, ask_approval, sandbox_words
from tests.harness import server_env


def test_B_SBX_2_the_sandbox_words_say_what_commands_may_do():
    on = {"mode": "workspace-write", "enforced": True, "mechanism": "landlock-v7+userns", "network": False}
    assert sandbox_words(on) == "sandbox workspace-write, no network"
    off = sandbox_words({**on, "enforced": False, "reason": "no Landlock"})
    assert off == "sandbox workspace-write is NOT enforced here (no Landlock): every command asks before it runs"
    assert sandbox_words({**on, "mode": "off", "enforced": False}) == "sandbox off"


async def test_B_SBX_3_an_escalation_is_said_before_the_request():
    out = io.StringIO()
    params = {
        "tool": "run_command",
        "title": "Runs OUTSIDE the sandbox: run_command: make",
        "detail": "make",
        "outsideSandbox": True,
        "reason": "x",
    }
    await ask_approval(Printer(out), params)
    assert out.getvalue().startswith("!! this command would run OUTSIDE the sandbox")


def test_B_SBX_1_threadline_chat_prints_the_session_sandbox(tmp_path: Path, home: Path):
    done = subprocess.run(
        [str(Path(sys.executable).parent / "threadline"), "chat", "--cwd", str(tmp_path), "--sandbox", "read-only"],
        input="",
        env=server_env(home, THREADLINE_SANDBOX_PROBE="fail"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "sandbox read-only is NOT enforced here (the sandbox probe was made to fail" in done.stdout
