"""B-SBX-5: nothing a confined command can reach holds the server's memory, performed for real.

The fourth review's attack: a confined command walks up its ancestors (its relay, the server, ``threadline exec``
or the daemon, up to pid 1) and then every other process, and reads each one's ``/proc/<pid>/mem`` and
``environ`` (``memory_reader.py``), looking for the provider key and another session's text. Run where the
reviewer ran it: ``threadline exec`` (a foreground command, a background one, a hook) and the daemon (project Y's
command, project X's conversation), each a real process tree on this machine's kernel. As root (this machine's
CI) reading an unconfined process's memory is otherwise allowed, so these tests are the strict case; as a user
the same reads fail for more reasons still.

Each secret is random per run and the reader looks for a shape, never a value, so only the server's memory can
hold what it would find. Its ``CONTROL`` line proves the reading works here.
"""

from __future__ import annotations

import json
import secrets
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from server.sandbox.runner import support
from tests.cli_support import command_env
from tests.e2e.daemon_support import bridge, daemon_env, open_home_fixture, session_updates
from tests.e2e.test_exec_e2e import exec_, ndjson, updates
from tests.harness import new_fake

pytestmark = pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}")

KEY = "sk-bsbx5-" + secrets.token_hex(16)  # what the double requires: the server must hold it to talk to it
NOTE = "PRIVATE-NOTE-" + secrets.token_hex(16)  # what only project X's conversation holds
READER = Path(__file__).with_name("memory_reader.py")
ATTACK = shlex.join([sys.executable, "-I", str(READER)])

open_home = open_home_fixture()


@pytest.fixture(scope="module")
def fake() -> Iterator[Any]:
    with new_fake(api_key=KEY) as double:
        yield double


def command(call_id: str, text: str, **more: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"command": text, **more}}]}


def assert_found_nothing(report: str, *secret: str) -> None:
    """The reader ran, read its own memory (the method works), walked past its parent, and found nothing."""
    lines = report.splitlines()
    head = next((line.split() for line in lines if line.startswith("SELF ")), None)
    assert head is not None and head[2] == "ANCESTORS", report
    chain = [int(pid) for pid in head[3:]]
    assert len(chain) >= 3, report  # the relay, the server, what started it
    assert any(line.startswith("READ self ") and "CONTROL" in line for line in lines), report
    seen = {int(line.split()[1]) for line in lines if line.startswith("DENIED ")}
    seen |= {int(line.split()[2]) for line in lines if line.startswith("READ ancestor ")}
    assert seen == set(chain), report  # every ancestor was tried
    assert "FOUND" not in report, report
    for value in secret:
        assert value not in report, report


def test_B_SBX_5_under_exec_a_command_a_background_command_and_a_hook_find_no_key_in_any_ancestor(fake, home, folder):
    """``exec --policy autoEdit``, as the reviewer ran it: the key is in exec's environment at its start and in
    the server's settings and HTTP client while it runs."""
    hook = f"{ATTACK} > hook.txt"
    (home / "config.toml").write_text(f"[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(hook)}\n")
    env = command_env(fake, home, THREADLINE_API_KEY=KEY)
    env.pop("THREADLINE_SANDBOX", None)  # the machine enforces it (see pytestmark): the real default applies
    fake.push(
        command("c1", f"{ATTACK} > bg.part && mv bg.part bg.txt", background=True),
        command("c2", ATTACK),
        command("c3", "while [ ! -e bg.txt ]; do sleep 0.05; done; cat bg.txt"),
        {"content": "done"},
    )
    args = ("--cwd", str(folder), "--policy", "autoEdit", "--output-format", "stream-json", "look around")
    run = exec_(env, *args)
    assert run.returncode == 0, run.stderr
    objects = ndjson(run)
    assert objects[0]["sandbox"]["enforced"] is True
    results = [u["content"] for u in updates(objects, "toolResult")]
    assert len(results) == 3, results
    assert_found_nothing(results[1], KEY)  # the foreground command
    assert_found_nothing(results[2], KEY)  # the background one, as it wrote it
    assert_found_nothing((folder / "hook.txt").read_text(), KEY)
    assert objects[-1]["result"] == "done"


@pytest.mark.asyncio
async def test_B_SBX_5_under_the_daemon_project_ys_command_finds_neither_the_key_nor_project_xs_text(
    open_home, fake, tmp_path
):
    """Two clients of one daemon: X's conversation holds a private note, then Y's confined command reads every
    process it can. The daemon holds X's text and the key in its memory; Y's command must reach neither."""
    fake.reset()
    env = daemon_env(open_home, fake, THREADLINE_API_KEY=KEY)
    env.pop("THREADLINE_SANDBOX", None)
    x_folder, y_folder = tmp_path / "x", tmp_path / "y"
    x_folder.mkdir()
    y_folder.mkdir()
    x, y = await bridge(env, open_home), await bridge(env, open_home)
    try:
        x_sid = (await x.request("createSession", {"cwd": str(x_folder)}))["sessionId"]
        fake.push({"content": f"Noted: {NOTE}."})
        await x.request("submitTurn", {"sessionId": x_sid, "text": f"Keep this to yourself: {NOTE}"})
        created = await y.request("createSession", {"cwd": str(y_folder), "approvalPolicy": "autoEdit"})
        assert created["sandbox"]["enforced"] is True
        fake.push(command("c1", ATTACK), {"content": "done"})
        await y.request("submitTurn", {"sessionId": created["sessionId"], "text": "look around"})
        (report,) = [
            u["update"]["content"]
            for u in session_updates(y, created["sessionId"])
            if u["update"]["kind"] == "toolResult"
        ]
        assert_found_nothing(report, KEY, NOTE)
    finally:
        await x.close()
        await y.close()
