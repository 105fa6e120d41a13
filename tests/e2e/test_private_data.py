"""Everything the server keeps under its data folder is the user's alone: folders 0700, files 0600
(``server.private_files``, docs/RELIABILITY.md "The data folder").

Real runs, then a walk of what they made: ``threadline exec`` on a data folder that does not exist yet, three
levels down (so each folder on the way is the server's to make), with a turn that stores an artifact, a checkpoint
and a user memory entry; and the daemon started by a real ``threadline connect`` with a real MCP stdio server, for
the daemon's folder and log and the MCP server's log. The umask is the usual 022, under which ``mkdir`` and
``open`` would have made them 0755 and 0644.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.cli_support import command_env, fake_fixture
from tests.e2e.daemon_support import bridge, daemon_env, open_home_fixture, stop_daemon, wait_for
from tests.e2e.test_exec_e2e import exec_, ndjson, updates
from tests.harness import REPO

fake = fake_fixture()
open_home = open_home_fixture()


@pytest.fixture(autouse=True)
def usual_umask():
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def modes(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every folder and file under ``root`` (``root`` too), as ``relative path -> octal mode``."""
    found = {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            relative = str(path.relative_to(root))
            if relative not in skip and not path.is_symlink():
                found[relative] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def open_to_others(found: dict[str, str], root: Path) -> list[str]:
    wrong = []
    for relative, mode in found.items():
        want = 0o700 if (root / relative).is_dir() else 0o600
        if int(mode, 8) != want:
            wrong.append(f"{relative}: {mode}")
    return wrong


def call(call_id: str, tool: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]}


def test_exec_makes_its_data_folder_and_every_folder_on_the_way_0700_and_its_files_0600(fake, tmp_path, folder):
    outer = tmp_path / "data"
    home = outer / "deeper" / "threadline"
    env = command_env(fake, home, THREADLINE_SANDBOX="off")
    (folder / "notes.txt").write_text("before\n")
    fake.push(
        call("c1", "run_command", command="head -c 80000 /dev/zero | tr '\\0' x"),  # an artifact (over 50 KB)
        call("c2", "edit_file", path="notes.txt", old_string="before", new_string="after"),  # a checkpoint
        call("c3", "save_memory", scope="user", text="the user likes short answers"),
        {"content": "done"},
    )
    run = exec_(env, "--cwd", str(folder), "--policy", "auto", "--output-format", "stream-json", "do it")
    assert run.returncode == 0, run.stderr
    assert [u["status"] for u in updates(ndjson(run), "toolResult")] == ["ok", "ok", "ok"]
    found = modes(outer)
    for made in ("artifacts", "checkpoints", "memory.md", "threadline.db", "leases"):
        assert any(p == f"deeper/threadline/{made}" for p in found), sorted(found)
    assert any(p.startswith("deeper/threadline/artifacts/") and p.endswith(".txt") for p in found), sorted(found)
    assert sum(p.startswith("deeper/threadline/checkpoints/") for p in found) >= 2, sorted(found)  # folder, blob
    assert open_to_others(found, outer) == [], found


@pytest.mark.asyncio
async def test_the_daemon_its_log_and_an_mcp_servers_log_are_the_users_alone(open_home, fake, folder):
    home = open_home  # made by the test (0755, so another uid may try the daemon elsewhere): its inside is checked
    (home / "config.toml").write_text(
        f"[mcp_servers.fake]\ncommand = {json.dumps(sys.executable)}\n"
        f'args = ["-m", "tests.fakes.mcp_server"]\ncwd = {json.dumps(str(REPO))}\n'
    )
    client = await bridge(daemon_env(home, fake, THREADLINE_SANDBOX="off"), home)
    try:
        sid = (await client.request("createSession", {"cwd": str(folder)}))["sessionId"]
        fake.reset()
        fake.push({"content": "hello"})
        await client.request("submitTurn", {"sessionId": sid, "text": "hi"})
        await wait_for(lambda: any((home / "mcp-logs").glob("*.log")), 60, "the MCP server's log")
    finally:
        await client.close()
        stop_daemon(home)
    found = modes(home, skip=("config.toml",))
    del found["."]
    for made in ("daemon", "logs/daemon.log", "threadline.db", "mcp-logs"):
        assert made in found, sorted(found)
    assert open_to_others(found, home) == [], found
