"""Schema migrations (PRAGMA user_version): from nothing, and from the previous version with data in it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from server.agent.views import open_store
from server.transcript import NewMessage, StorageFailure, Store
from server.transcript.schema import MIGRATIONS, SCHEMA_VERSION, _statements, migrate
from server.transcript.view_state import SNAPSHOT_EVERY
from tests.conftest import long_history


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("PRAGMA user_version").fetchone()[0]


def columns(path: Path, table: str) -> list[str]:
    with sqlite3.connect(path) as db:
        return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def build_at(path: Path, version: int) -> None:
    """A database as schema ``version`` left it (its scripts run by hand, not by ``migrate``), holding a session,
    messages with a tool call, and their FTS rows, written with V1's columns only."""
    db = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:version]:
        assert isinstance(step, str), "a Python migration step: build this version another way"
        for statement in _statements(step):
            db.execute(statement)
    db.execute(f"PRAGMA user_version = {version}")
    db.execute(
        "INSERT INTO sessions (id, title, cwd, created_at, updated_at, last_seq) VALUES"
        " ('ses_old', 'old session', '/w', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 3)"
    )
    rows = [
        (1, "user", "please fix the narwhalic parser", None, None),
        (
            2,
            "assistant",
            "",
            '[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\\"path\\": \\"p.py\\"}"}}]',
            None,
        ),
        (3, "tool", "def parse(): ...", None, "c1"),
    ]
    for seq, role, content, calls, call_id in rows:
        cur = db.execute(
            "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, created_at)"
            " VALUES ('ses_old', ?, ?, ?, ?, ?, '2025-01-01T00:00:00.000Z')",
            (seq, role, content, calls, call_id),
        )
        db.execute("INSERT INTO messages_fts (rowid, text) VALUES (?, ?)", (cur.lastrowid, content or ""))
    db.close()


async def test_empty_path_is_created_at_the_current_version(tmp_path):
    path = tmp_path / "new" / "threadline.db"
    store = await Store.open(path)
    await store.close()
    assert user_version(path) == SCHEMA_VERSION
    assert "tokens" in columns(path, "messages")
    for table in ("sessions", "messages", "events", "artifacts", "messages_fts"):
        assert columns(path, table), table


async def test_an_existing_database_at_version_0_is_migrated(tmp_path):
    """A SQLite file with no Threadline schema yet (user_version 0) is migrated; a 0-byte file is refused
    instead (tests/reliability/test_storage_faults.py): that is a truncated database, not a new one."""
    path = tmp_path / "threadline.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE scratch (x)")
    assert user_version(path) == 0
    store = await Store.open(path)
    try:
        sid = (await store.create_session("/w")).id
        await store.append_messages(sid, [NewMessage(role="user", content="hi")])
    finally:
        await store.close()
    assert user_version(path) == SCHEMA_VERSION


@pytest.mark.parametrize("start", range(1, SCHEMA_VERSION), ids=lambda v: f"from_v{v}")
async def test_R_SRC_1_older_schema_with_rows_migrates_keeping_every_row_and_bumps_the_version(tmp_path, start):
    """Every older version, the previous one included, reaches the current schema with its rows intact."""
    path = tmp_path / "threadline.db"
    build_at(path, start)
    store = await Store.open(path)
    try:
        assert user_version(path) == SCHEMA_VERSION
        session = await store.get_session("ses_old")
        assert (session.title, session.message_count) == ("old session", 3)
        old = await store.all_messages("ses_old")
        assert [(m.seq, m.role, m.content) for m in old] == [
            (1, "user", "please fix the narwhalic parser"),
            (2, "assistant", ""),
            (3, "tool", "def parse(): ..."),
        ]
        assert old[1].tool_calls is not None
        assert old[1].tool_calls[0]["function"]["name"] == "read_file" and old[2].tool_call_id == "c1"
        assert all(m.tokens is None for m in old), "old rows are estimated on read, not rewritten"
        assert "tokens" in columns(path, "messages")
        assert [h.seq for h in await store.search("narwhalic")] == [1]
        [new] = await store.append_messages("ses_old", [NewMessage(role="user", content="and now?")])
        assert new.seq == 4
    finally:
        await store.close()


async def test_v1_to_v2_adds_the_token_column_with_null_for_old_rows(tmp_path):
    path = tmp_path / "threadline.db"
    build_at(path, 1)
    assert "tokens" not in columns(path, "messages")
    store = await Store.open(path)
    await store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT seq, tokens FROM messages ORDER BY seq").fetchall() == [
            (1, None),
            (2, None),
            (3, None),
        ]


async def test_migrating_twice_is_a_no_op(tmp_path):
    path = tmp_path / "threadline.db"
    build_at(path, 1)
    for _ in range(2):
        store = await Store.open(path)
        await store.close()
    with sqlite3.connect(path, isolation_level=None) as db:
        assert migrate(db) == SCHEMA_VERSION
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (3,)


async def test_a_database_from_a_newer_threadline_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "threadline.db"
    build_at(path, 1)
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StorageFailure, match="newer than this Threadline"):
        await Store.open(path)
    assert user_version(path) == SCHEMA_VERSION + 1
    assert "tokens" not in columns(path, "messages")


def test_two_servers_migrating_a_new_database_at_once_both_end_at_the_current_version(tmp_path: Path):
    """Two servers started together on a fresh home both read version 0, then take the write lock in turn; the
    second must not apply the steps again (it failed with "duplicate column name"). The race is played
    deterministically: the other server's whole migration runs between this one's read and its first step."""
    path = tmp_path / "threadline.db"

    class Racing(sqlite3.Connection):
        raced = False

        def execute(self, sql, *args):
            result = super().execute(sql, *args)
            if sql == "PRAGMA user_version" and not Racing.raced:
                Racing.raced = True
                other = sqlite3.connect(path, isolation_level=None)  # the other server, first to the lock
                migrate(other)
                other.close()
            return result

    conn = sqlite3.connect(path, isolation_level=None, factory=Racing)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        assert migrate(conn) == 0  # it saw a new database
        assert Racing.raced
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()
    assert "tool_calls" in columns(path, "messages")  # one schema, whole, not two half-applied ones


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def snapshot_rows(path: Path, table: str) -> list[tuple[str, int, str]]:
    with sqlite3.connect(path) as db:
        return db.execute(f"SELECT session_id, seq, head FROM {table} ORDER BY session_id, seq").fetchall()


async def _append(store: Store, sid: str, msgs: list[dict], batch: int = 500) -> None:
    for i in range(0, len(msgs), batch):
        new = [
            NewMessage(m["role"], m.get("content"), tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id"))
            for m in msgs[i : i + batch]
        ]
        await store.append_messages(sid, new)


async def test_issue_29_v11_view_checkpoints_become_view_snapshots_kept_and_built_on(tmp_path: Path):
    """v12 renames v10's ``view_checkpoints`` to ``view_snapshots`` ("checkpoint" names file checkpoints only). A
    database at v11 (its scripts run by hand) holding a long session and the view snapshots the store made for
    it, under the old table name, opens at v12 with every row in the renamed table, and the store builds on them:
    the next append makes its next snapshot from the newest migrated one (a session this long with none would get
    none from an append), exactly as a store that never migrated does."""
    history, more = long_history(3 * SNAPSHOT_EVERY + 100), long_history(SNAPSHOT_EVERY + 50)
    made = tmp_path / "made.db"  # the rows, made by the real store and pipeline as the server opens them
    async with await open_store(made) as store:
        sid = (await store.create_session("/w", "long")).id
        await _append(store, sid, history)
    kept = snapshot_rows(made, "view_snapshots")
    assert len(kept) >= 2

    old = tmp_path / "threadline.db"
    build_at(old, 11)  # v11: before v12 renamed the table
    assert "view_checkpoints" in tables(old) and "view_snapshots" not in tables(old)
    with sqlite3.connect(old) as db:
        db.execute("ATTACH DATABASE ? AS made", (str(made),))
        db.execute("INSERT INTO sessions SELECT * FROM made.sessions")
        names = ", ".join(c for c in columns(made, "messages") if c != "id")  # ses_old's messages hold ids 1..3
        db.execute(f"INSERT INTO messages ({names}) SELECT {names} FROM made.messages")
        db.execute(
            "INSERT INTO view_checkpoints (session_id, seq, head) SELECT session_id, seq, head FROM made.view_snapshots"
        )
    assert snapshot_rows(old, "view_checkpoints") == kept

    async with await open_store(old) as store:
        assert user_version(old) == SCHEMA_VERSION
        assert "view_checkpoints" not in tables(old)
        assert snapshot_rows(old, "view_snapshots") == kept
        assert [seq for seq, _, _ in await store.view_snapshots(sid)] == sorted((s for _, s, _ in kept), reverse=True)
        await _append(store, sid, more)
    async with await open_store(made) as store:
        await _append(store, sid, more)
    after = snapshot_rows(old, "view_snapshots")
    assert max(seq for _, seq, _ in after) > max(seq for _, seq, _ in kept)  # a new one, made from a migrated one
    assert after == snapshot_rows(made, "view_snapshots")
