"""Cold start of a long session no turn has compacted (B-CACHE-3): the real server over stdio on a real SQLite file.

A history stored through the store's API without view snapshots (as a version before schema v10 stored it: no
``contextCompacted`` event either) is viewed with ``getContextView`` by server A, which reads all of it once and
saves where its view put the safe tail. Server B, started afterwards on the same data folder, resumes from that
point: same view, without reading the history the saved head covers; a view that does need all of it still gets
it. A history stored through the store as the server opens it (``open_store``) has view snapshots, and even the
first server to view it resumes from one.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from server.agent.views import open_store
from server.context import estimate_message_tokens
from server.transcript import NewMessage, Store
from tests.conftest import KIMI, MINI_SWE, load_trajectory, long_history
from tests.harness import log_path, running_client

pytestmark = pytest.mark.asyncio

MESSAGES = 3_000
WINDOW = 16_000


async def _imported_session(home: Path, folder: Path, *, snapshots: bool = False) -> str:
    """``MESSAGES`` real messages (two trajectories, cycled, call ids made unique per cycle), appended 500 at a
    time; with ``snapshots`` through the store as the server opens it, else as a version before schema v10."""
    path = home / "threadline.db"
    store = await (open_store(path) if snapshots else Store.open(path, estimate=estimate_message_tokens))
    async with store:
        session = await store.create_session(str(folder), "imported")
        history = long_history(MESSAGES)
        for i in range(0, MESSAGES, 500):
            batch = [
                NewMessage(
                    m["role"], m.get("content"), tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id")
                )
                for m in history[i : i + 500]
            ]
            await store.append_messages(session.id, batch)
        return session.id


async def _views(home: Path, sid: str, count: int = 1, **params: Any) -> tuple[list[dict[str, Any]], str]:
    """``count`` getContextView calls on one fresh server, and what that server logged."""
    before = log_path(home).read_text() if log_path(home).exists() else ""
    async with running_client(home, args=("--log-level", "INFO")) as client:
        args = {"sessionId": sid, "contextWindowTokens": WINDOW, **params}
        views = [await client.request("getContextView", args) for _ in range(count)]
    return views, log_path(home).read_text()[len(before) :]


async def _view(home: Path, sid: str, **params: Any) -> tuple[dict[str, Any], str]:
    views, log = await _views(home, sid, **params)
    return views[0], log


async def test_B_CACHE_3_a_restarted_server_resumes_an_uncompacted_history_from_the_saved_point(home, folder):
    sid = await _imported_session(home, folder)
    (first, repeated), log_a = await _views(home, sid, 2)
    assert first["mode"] == "summarized" and first["transcriptMessages"] == MESSAGES
    assert "resumed" not in log_a  # nothing to resume from yet: A reads the whole history ...
    assert "trimmed to seq" in log_a  # ... then holds only what a restarted server would
    assert repeated == first

    again, log_b = await _view(home, sid)
    assert again == first  # the same request, byte for byte, and the same figures
    assert "resumed from the saved resume point" in log_b
    assert "reading all of it" not in log_b
    older = int(log_b.split("older messages not held")[0].split(";")[-1])
    assert older > MESSAGES * 0.9  # B did not read the history the head covers


async def test_B_CACHE_3_a_view_that_needs_the_whole_history_still_gets_it_after_resuming(home, folder):
    sid = await _imported_session(home, folder)
    await _view(home, sid)
    # A window the whole history fits (and a budget as large, B-BUDGET-1: else what clearing leaves is summarized
    # as at 128k): the resumed state cannot build it and the server reads everything.
    config = home / "config.toml"
    config.write_text((config.read_text() if config.exists() else "") + "\n[context]\nbudget = 5000000\n")
    whole, log = await _view(home, sid, contextWindowTokens=5_000_000)
    assert "resumed from the saved resume point" in log and "reading all of it" in log
    assert whole["mode"] == "full" and whole["transcriptMessages"] == MESSAGES
    assert whole["estimatedTokens"] == whole["beforeTokens"]


async def test_B_CACHE_3_an_imported_history_opens_without_reading_it_all_even_after_a_restart(home, folder):
    """``importSession`` stores the history in one append, which leaves view snapshots spread over it, and reads
    it into its view state once: the first view after a restart resumes without reading it all."""
    source = [m for path in (KIMI, MINI_SWE) for m in load_trajectory(path) if m["role"] != "system"]
    async with running_client(home, args=("--log-level", "INFO")) as client:
        imported = await client.request(
            "importSession", {"cwd": str(folder), "title": "imported", "messages": source * 3}
        )
    sid = imported["sessionId"]
    assert imported["messageCount"] == 3 * len(source)
    view, log = await _view(home, sid, contextWindowTokens=None)
    # from the view snapshots the import's append left (or the point the import's view saved), never all of it
    assert "resumed from the view snapshot" in log or "resumed from the saved resume point" in log, log
    assert "reading all of it" not in log
    assert view["mode"] == "summarized" and view["transcriptMessages"] == 3 * len(source)


async def _read_whole(home: Path, bare: Path, sid: str, window: int) -> dict[str, Any]:
    """The view of a server that reads the whole history: on a copy of ``home``'s database without view
    snapshots and resume points."""
    bare.mkdir()
    src, dst = sqlite3.connect(home / "threadline.db"), sqlite3.connect(bare / "threadline.db")
    try:
        src.backup(dst)
        with dst:
            dst.execute("DELETE FROM view_snapshots")
            dst.execute("DELETE FROM view_resume")
    finally:
        src.close()
        dst.close()
    whole, log = await _view(bare, sid, contextWindowTokens=window)
    assert "resumed" not in log  # nothing to resume from: it read everything
    return whole


def _snapshots(home: Path, sid: str) -> int:
    with sqlite3.connect(home / "threadline.db") as db:
        count = db.execute("SELECT COUNT(*) FROM view_snapshots WHERE session_id = ?", (sid,)).fetchone()[0]
    db.close()
    return count


def _older_not_held(log: str) -> int:
    return int(log.split("older messages not held")[0].split(";")[-1])


async def test_B_CACHE_3_a_history_written_through_the_store_opens_from_its_snapshot_on_the_first_view(
    tmp_path: Path, folder: Path
):
    """The first server ever to view a long history the store wrote with view snapshots (no compaction, no
    saved resume point) resumes from the newest one with a window of tokens after it: the same request, byte for
    byte, as a server that reads the whole history (the same database with its snapshots deleted)."""
    home = tmp_path / "home"
    sid = await _imported_session(home, folder, snapshots=True)
    for window in (WINDOW, 64_000):
        whole = await _read_whole(home, tmp_path / f"bare-{window}", sid, window)
        first, log = await _view(home, sid, contextWindowTokens=window)
        assert "resumed from the view snapshot" in log and "reading all of it" not in log, log
        assert _older_not_held(log) > MESSAGES / 2  # it did not read the history the snapshot's head covers
        assert first == whole
        assert first["mode"] == "summarized" and first["transcriptMessages"] == MESSAGES


async def test_B_CACHE_3_a_history_stored_without_snapshots_is_read_whole_once_then_gets_them(tmp_path, folder):
    """A long session stored before view snapshots existed is read whole by its first view, which leaves a
    snapshot; the store's later ones follow from it as messages are appended, so a view that its saved resume
    point cannot serve (a larger window) resumes from a snapshot instead of reading everything again."""
    home = tmp_path / "home"
    sid = await _imported_session(home, folder)
    assert _snapshots(home, sid) == 0
    _, log = await _view(home, sid)
    assert "resumed" not in log and _snapshots(home, sid) == 1
    async with await open_store(home / "threadline.db") as store:
        more = [
            NewMessage(m["role"], m.get("content"), tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id"))
            for m in long_history(MESSAGES + 1_500)[MESSAGES + 1 :]  # the history's next cycle, call ids its own
        ]
        await store.append_messages(sid, [NewMessage("user", "and now the next task"), *more])
    assert _snapshots(home, sid) >= 2  # made from the first one and the messages since
    whole = await _read_whole(home, tmp_path / "bare", sid, 64_000)
    view, log = await _view(home, sid, contextWindowTokens=64_000)
    assert "resumed from the view snapshot" in log and "reading all of it" not in log, log
    assert view == whole and view["transcriptMessages"] == MESSAGES + 1_500


def _as_stored_before_fold_versions(home: Path) -> int:
    """Rewrites every stored view snapshot and resume point as a version before the summary listed older
    failures wrote it (its fold without a version, holding the latest 4 failures only); returns how many."""
    with sqlite3.connect(home / "threadline.db") as db:
        changed = 0
        for table in ("view_snapshots", "view_resume"):
            changed += db.execute(
                f"UPDATE {table} SET head = json_set(json_remove(head, '$.fold.v'), '$.fold.failures',"
                " json(coalesce((SELECT json_group_array(value) FROM (SELECT value FROM"
                " json_each(head, '$.fold.failures') ORDER BY key DESC LIMIT 4) ORDER BY 1), '[]')))"
            ).rowcount
    db.close()
    return changed


def _as_stored_by_fold_version_2(home: Path) -> int:
    """Rewrites every stored view snapshot and resume point as fold version 2 wrote it, before B-SUM-10: each
    failure one line of text (``call: excerpt``), not a call and its telling line; returns how many."""
    with sqlite3.connect(home / "threadline.db") as db:
        changed = 0
        for table in ("view_snapshots", "view_resume"):
            changed += db.execute(
                f"UPDATE {table} SET head = json_set(head, '$.fold.v', 2, '$.fold.failures', json(coalesce((SELECT"
                " json_group_array(json_extract(value, '$[0]') || ': ' || json_extract(value, '$[1]')) FROM"
                " json_each(head, '$.fold.failures')), '[]')))"
            ).rowcount
    db.close()
    return changed


def _as_stored_by_fold_version_4(home: Path) -> int:
    """Rewrites every stored view snapshot and resume point as fold version 4 wrote it, before editor-diagnostics
    failures were dropped once fixed: failures ``[call, telling]`` and open calls ``[id, name, label]``,
    without a path; returns how many."""
    with sqlite3.connect(home / "threadline.db") as db:
        changed = 0
        for table in ("view_snapshots", "view_resume"):
            changed += db.execute(
                f"UPDATE {table} SET head = json_set(head, '$.fold.v', 4, '$.fold.failures', json(coalesce((SELECT"
                " json_group_array(json_array(json_extract(value, '$[0]'), json_extract(value, '$[1]'))) FROM"
                " json_each(head, '$.fold.failures')), '[]')), '$.fold.openCalls', json(coalesce((SELECT"
                " json_group_array(json_array(json_extract(value, '$[0]'), json_extract(value, '$[1]'),"
                " json_extract(value, '$[2]'))) FROM json_each(head, '$.fold.openCalls')), '[]')))"
            ).rowcount
    db.close()
    return changed


@pytest.mark.parametrize(
    "rewrite",
    [_as_stored_before_fold_versions, _as_stored_by_fold_version_2, _as_stored_by_fold_version_4],
    ids=["unversioned", "version-2", "version-4"],
)
async def test_B_CACHE_3_a_snapshot_stored_before_every_failure_was_summarized_is_not_built_on(
    tmp_path, folder, rewrite
):
    """A summary fold stored by an older version kept only the latest four failures (unversioned), or kept failure
    lines of the old format (version 2, before B-SUM-10); a state resumed from it would summarize differently from
    one that reads the history. Such snapshots are passed over: the first view reads the whole history once and
    sends exactly what a full read gives, and the next server resumes from what it saved."""
    home = tmp_path / "home"
    sid = await _imported_session(home, folder, snapshots=True)
    assert rewrite(home) == _snapshots(home, sid) > 0
    whole = await _read_whole(home, tmp_path / "bare", sid, WINDOW)
    first, log = await _view(home, sid)
    assert "resumed" not in log, log  # neither an old snapshot nor an old resume point was built on
    assert first == whole
    again, log = await _view(home, sid)
    assert "resumed from the saved resume point" in log and again == whole


def _resume_rows(home: Path, sid: str) -> tuple[int, int]:
    with sqlite3.connect(home / "threadline.db") as db:
        rows = tuple(
            db.execute(f"SELECT COUNT(*) FROM {table} WHERE session_id = ?", (sid,)).fetchone()[0]
            for table in ("view_resume", "view_snapshots")
        )
    db.close()
    return rows


async def test_issue_29_getContextView_is_a_read_and_writes_nothing_what_it_learned_is_kept_at_close(home, folder):
    """A read never writes: while the server runs, the views leave the database as it was (the resume point and the
    view snapshot they learned wait in the session's handle); the server keeps them when it closes, so the next
    server still resumes (B-CACHE-3)."""
    sid = await _imported_session(home, folder)
    async with running_client(home, args=("--log-level", "INFO")) as client:
        for _ in range(2):
            view = await client.request("getContextView", {"sessionId": sid, "contextWindowTokens": WINDOW})
            assert view["mode"] == "summarized"
        assert _resume_rows(home, sid) == (0, 0)
    assert _resume_rows(home, sid) == (1, 1)
    _, log = await _view(home, sid)
    assert "resumed from the saved resume point" in log
