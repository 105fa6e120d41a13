"""The ``threadline`` command line, run as a subprocess against a temp home (each command starts its own server)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from server.cli.client import Client
from tests.conftest import KIMI, MINI_SWE
from tests.harness import REPO, server_env

THREADLINE = REPO / ".venv" / "bin" / "threadline"


def threadline(home: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(THREADLINE), *args], env=server_env(home), cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_cli_import_sessions_search_against_a_temp_home(home, folder):
    empty = threadline(home, "sessions")
    assert empty.returncode == 0 and "no sessions yet" in empty.stdout

    imported = threadline(home, "import", str(MINI_SWE), "--cwd", str(folder), "--title", "astroid 1333")
    assert imported.returncode == 0, imported.stderr
    match = re.fullmatch(r"imported (\d+) messages as (ses_\w+)\n", imported.stdout)
    assert match and int(match.group(1)) == len(json.loads(MINI_SWE.read_text()))
    sid = match.group(2)
    other = threadline(home, "import", str(KIMI), "--cwd", str(folder)).stdout.split()[-1]

    listed = threadline(home, "sessions", "--cwd", str(folder))
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert len(lines) == 2 and other in lines[0] and sid in lines[1]
    assert "astroid 1333" in lines[1] and "378 msgs" in lines[1]

    found = threadline(home, "search", "modutils", "--session", sid, "--limit", "3")
    assert found.returncode == 0
    hits = found.stdout.splitlines()
    assert 0 < len(hits) <= 3 and all(h.startswith(f"{sid} #") for h in hits)

    nothing = threadline(home, "search", '"unbalanced AND (')
    assert nothing.returncode == 0 and nothing.stdout == "no matches\n"


def test_cli_import_of_invalid_messages_fails_cleanly_and_stores_nothing(home, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]}))
    result = threadline(home, "import", str(bad), "--cwd", str(tmp_path))
    assert result.returncode == 1
    assert "message 2 has role 'robot'" in result.stderr and "Traceback" not in result.stderr
    # The file is read before any server starts (issue 51): no store is even made, or it holds nothing
    if (home / "threadline.db").exists():
        with sqlite3.connect(home / "threadline.db") as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table in {"sessions", "messages"} & tables:
                assert db.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)


@pytest.mark.asyncio
async def test_python_m_server_behaves_as_threadline_serve(home, folder):
    """Same initialize answer, same store: a session made through one is read through the other."""
    via_module = await Client.spawn(env=server_env(home), cwd=str(REPO), args=[sys.executable, "-m", "server"])
    try:
        sid = (
            await via_module.request(
                "importSession",
                {"cwd": str(folder), "messages": [{"role": "user", "content": "hello from python -m server"}]},
            )
        )["sessionId"]
    finally:
        assert await via_module.close() == 0
    via_cli = await Client.spawn(env=server_env(home), cwd=str(REPO), args=[str(THREADLINE), "serve"])
    try:
        assert via_cli.initialize_result == via_module.initialize_result
        items = (await via_cli.request("readTranscript", {"sessionId": sid}))["items"]
        assert [i["content"] for i in items] == ["hello from python -m server"]
    finally:
        assert await via_cli.close() == 0


def test_serve_refuses_a_database_from_a_newer_threadline_with_a_clear_message(home):
    with sqlite3.connect(home / "threadline.db") as db:
        db.execute("PRAGMA user_version = 99")
    proc = subprocess.run(
        [str(THREADLINE), "serve"], env=server_env(home), cwd=REPO, input=b"", capture_output=True, timeout=30
    )
    assert proc.returncode == 2
    assert b"newer than this Threadline" in proc.stderr and b"Traceback" not in proc.stderr


def test_serve_reports_a_bad_config_file_without_a_traceback(home):
    (home / "config.toml").write_text("approval_policy = 'sometimes'\n")
    proc = subprocess.run(
        [str(THREADLINE), "serve"], env=server_env(home), cwd=REPO, input=b"", capture_output=True, timeout=30
    )
    assert proc.returncode == 2
    assert b"approval_policy" in proc.stderr and b"Traceback" not in proc.stderr
    assert os.path.exists(home / "config.toml")
