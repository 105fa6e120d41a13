"""File diffs across a restart, over the real server: an applied edit's diff is stored (a ``fileDiff`` event) so a
resumed session's tool card can show it, bounded in size; a session from before checkpoints existed (a database
at schema v5) says there is nothing to restore."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from server.agent.diffs import MAX_STORED_DIFF_CHARS
from server.transcript.schema import MIGRATIONS, _statements
from tests.e2e.agent_support import API_KEY, running_agent
from tests.fakes.fake_provider import FakeProvider

pytestmark = pytest.mark.asyncio


def call(call_id: str, name: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


async def test_applied_diffs_survive_a_restart_and_an_oversized_one_keeps_its_path_and_a_note(tmp_path: Path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (ws / "a.txt").write_text("hello\nworld\n")
    big = "x" * (MAX_STORED_DIFF_CHARS + 10)
    with FakeProvider(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as agent:
            sid = await agent.session(ws, policy="autoEdit")
            fake.push(
                call("c1", "edit_file", path="a.txt", old_string="hello", new_string="bonjour"),
                call("c2", "write_file", path="big.txt", content=big),
                call("c3", "edit_file", path="a.txt", old_string="absent", new_string="x"),
                {"content": "done"},
            )
            result = await agent.turn(sid, "edit")
            assert result["stopReason"] == "endTurn", result
            live: dict[str, Any] = {u["toolCallId"]: u.get("diff") for u in agent.updates(sid, "toolResult")}
        assert live["c1"] == {"path": "a.txt", "oldText": "hello\nworld\n", "newText": "bonjour\nworld\n"}
        assert live["c2"]["newText"] == big, "the live update carries the whole change"

        async with running_agent(home, fake) as agent:
            got = await agent.client.request("readEvents", {"sessionId": sid, "kinds": ["fileDiff"]})
    events = got["events"]
    assert [e["payload"]["toolCallId"] for e in events] == ["c1", "c2"], "a failed edit stores no diff"
    assert all(e["turnId"] == result["turnId"] for e in events)
    first, second = (e["payload"] for e in events)
    assert first == {
        "toolCallId": "c1",
        "tool": "edit_file",
        "path": "a.txt",
        "diff": {"path": "a.txt", "oldText": "hello\nworld\n", "newText": "bonjour\nworld\n"},
    }
    assert second["path"] == "big.txt" and "diff" not in second
    assert "not kept" in second["note"] and str(MAX_STORED_DIFF_CHARS) in second["note"]


def build_v5_home(home: Path, cwd: Path) -> None:
    """A data home as Threadline left it before file checkpoints (schema v5): one turn that edited a file."""
    db = sqlite3.connect(home / "threadline.db", isolation_level=None)
    for step in MIGRATIONS[:5]:
        assert isinstance(step, str)
        for statement in _statements(step):
            db.execute(statement)
    db.execute("PRAGMA user_version = 5")
    stamp = "2025-01-01T00:00:00.000Z"
    db.execute(
        "INSERT INTO sessions (id, title, cwd, created_at, updated_at, last_seq) VALUES ('ses_old', 'old', ?, ?, ?, 3)",
        (str(cwd), stamp, stamp),
    )
    calls = (
        '[{"id":"c1","type":"function","function":{"name":"edit_file","arguments":'
        '"{\\"path\\": \\"a.txt\\", \\"old_string\\": \\"one\\", \\"new_string\\": \\"two\\"}"}}]'
    )
    for seq, role, content, tool_calls, call_id in [
        (1, "user", "edit a.txt", None, None),
        (2, "assistant", "", calls, None),
        (3, "tool", "Edited a.txt", None, "c1"),
    ]:
        db.execute(
            "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, turn_id,"
            " created_at) VALUES ('ses_old', ?, ?, ?, ?, ?, 'turn_old', ?)",
            (seq, role, content, tool_calls, call_id, stamp),
        )
    db.close()


async def test_a_session_from_before_checkpoints_lists_its_turn_and_has_nothing_restorable(tmp_path: Path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (ws / "a.txt").write_text("two\n")
    build_v5_home(home, ws)
    with FakeProvider(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as agent:
            listed = await agent.client.request("listCheckpoints", {"sessionId": "ses_old"})
            dry = await agent.client.request(
                "rewindFiles", {"sessionId": "ses_old", "toTurnId": "turn_old", "dryRun": True}
            )
            real = await agent.client.request("rewindFiles", {"sessionId": "ses_old", "toTurnId": "turn_old"})
            diffs = await agent.client.request("readEvents", {"sessionId": "ses_old", "kinds": ["fileDiff"]})
    assert [(t["turnId"], t["seq"], t["files"]) for t in listed["turns"]] == [("turn_old", 1, [])]
    for result in (dry, real):
        assert result["files"] == [] and "nothing to restore" in result["note"], result
        assert "run_command" in result["note"]
    assert diffs["events"] == [], "no diff was stored before this change: the tool card shows the text result"
    assert (ws / "a.txt").read_text() == "two\n"
