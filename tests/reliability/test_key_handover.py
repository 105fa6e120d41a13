"""Start time without loosening the key hiding: a client that starts the server hands the provider keys over a
pipe instead of the server re-executing itself to hide them. Attack: a command reads the server's original
environment block (``/proc/$PPID/environ``) and looks for every key, also one added to the environment after the
handover (the server must still hide it, re-executing with it and the handed-over keys)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from server.cli.client import Client
from server.security.key_handover import hand_over_keys
from tests.e2e.agent_support import model_requests
from tests.harness import API_KEY, REPO, initialize, log_path, new_fake, server_env
from tests.reliability.support import FIND_SERVER

LATE_KEY = "sk-late-SECRET-3b9e"
OTHER_KEY = "sk-other-SECRET-77d1"


@pytest.fixture(scope="module")
def fake():
    with new_fake(api_key=API_KEY) as f:
        yield f


@pytest.mark.parametrize("late", [False, True])
async def test_handed_over_keys_never_appear_in_the_servers_environment_block(fake, home: Path, folder: Path, late):
    fake.reset()
    # THREADLINE_SANDBOX=off: the environment must be clean even where commands are not confined (the sandbox
    # would also refuse the read of /proc/$PPID/environ, and so hide what this test looks for)
    env = {**server_env(home, fake.url), "OPENAI_API_KEY": OTHER_KEY, "THREADLINE_SANDBOX": "off"}
    child_env, fd = hand_over_keys(env)
    assert fd is not None and API_KEY not in child_env.values() and OTHER_KEY not in child_env.values()
    if late:
        child_env["DEEPSEEK_API_KEY"] = LATE_KEY  # not handed over: the server must hide it itself
    with open(log_path(home), "ab") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "server",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env=child_env,
            cwd=str(REPO),
            pass_fds=(fd,),
        )
    os.close(fd)
    client = await initialize(Client(proc))
    try:
        sid = (await client.request("createSession", {"cwd": str(folder), "approvalPolicy": "auto"}))["sessionId"]
        read = FIND_SERVER + "tr '\\0' '\\n' < /proc/$p/environ; echo PPID=$p"
        fake.push(
            {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": read}}]}, {"content": "ok"}
        )
        result = await client.request("submitTurn", {"sessionId": sid, "text": "look"})
        assert result["stopReason"] == "endTurn", result  # the key reached the provider: the double requires it
        (shown,) = [p["update"]["content"] for m, p in client.notifications if p["update"]["kind"] == "toolResult"]
    finally:
        await client.close()
    assert "PPID=" in shown and "THREADLINE_HOME=" in shown, shown  # it did read the server's environment
    for secret in (API_KEY, OTHER_KEY, LATE_KEY):
        assert secret not in shown
    assert len(model_requests(fake)) == 2
