"""Each session's usage totals as the store keeps them (schema v13, issue 50): always what summing its stored
``usage`` and ``childUsage`` events gives (B-CACHE-5), from a migrated database's old events on, through every
later write, and gone with the session; ``listSessions`` reads the list and the totals in one statement."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from server.transcript import NewMessage, Store
from server.transcript.schema import MIGRATIONS, SCHEMA_VERSION, _statements

FIELDS = ("inputTokens", "outputTokens", "cachedInputTokens", "cacheWriteTokens")


def summed(path: Path) -> dict[str, dict[str, Any]]:
    """The totals as the events give them: every usage event of a session, summed by SQLite."""
    sums = ", ".join(f"total(json_extract(payload, '$.{f}'))" for f in FIELDS)
    with sqlite3.connect(path) as db:
        rows = db.execute(
            f"SELECT session_id, {sums}, sum(json_extract(payload, '$.costUsd')) FROM events"
            " WHERE kind IN ('usage', 'childUsage') GROUP BY session_id"
        ).fetchall()
    return {r[0]: {**{f: int(v) for f, v in zip(FIELDS, r[1:5])}, "costUsd": r[5]} for r in rows}


def usage(n: int, cost: float | None) -> dict[str, Any]:
    return {"inputTokens": 100 * n, "outputTokens": n, "cachedInputTokens": 10 * n, "cacheWriteTokens": n % 3} | (
        {"costUsd": cost} if cost is not None else {}
    )


def v12_with_events(path: Path) -> None:
    """A database as v12 left it, holding three sessions: priced calls, unpriced calls and a subagent's, none."""
    db = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:12]:
        assert isinstance(step, str)
        for statement in _statements(step):
            db.execute(statement)
    db.execute("PRAGMA user_version = 12")
    for sid, stamp in (("ses_a", "01"), ("ses_b", "02"), ("ses_c", "03")):
        db.execute(
            "INSERT INTO sessions (id, title, cwd, created_at, updated_at, last_seq) VALUES (?, 't', '/w', ?, ?, 0)",
            (sid, f"2025-01-{stamp}T00:00:00.000Z", f"2025-01-{stamp}T00:00:00.000Z"),
        )
    events = [("ses_a", "usage", usage(n, 0.0125 * n)) for n in range(1, 6)]
    events += [("ses_a", "childUsage", usage(7, 0.5)), ("ses_a", "compaction", {"inputTokens": 999})]
    events += [("ses_b", "usage", usage(n, None)) for n in range(1, 4)]
    for sid, kind, payload in events:
        db.execute(
            "INSERT INTO events (session_id, kind, payload, created_at) VALUES (?, ?, json(?), 'x')",
            (sid, kind, json.dumps(payload)),
        )
    db.close()


async def test_B_CACHE_5_kept_totals_equal_the_usage_events_summed_from_migration_through_every_write(tmp_path):
    path = tmp_path / "threadline.db"
    v12_with_events(path)
    store = await Store.open(path)
    try:
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        before = summed(path)
        assert set(before) == {"ses_a", "ses_b"} and before["ses_b"]["costUsd"] is None
        sessions, totals = await store.list_sessions_with_totals()
        assert [s.id for s in sessions] == ["ses_c", "ses_b", "ses_a"]  # newest first, as list_sessions
        assert totals == before == await store.usage_totals(["ses_a", "ses_b", "ses_c"])

        # later writes: an event alone, events stored with messages, a priced call after unpriced ones, a new session
        await store.add_event("ses_b", "usage", usage(4, 0.25))
        await store.add_event("ses_c", "usage", usage(2, None))
        await store.add_event("ses_c", "notice", {"inputTokens": 5})
        await store.append_messages(
            "ses_a", [NewMessage(role="assistant", content="ok")], events=[("usage", usage(9, 0.001))]
        )
        new = await store.create_session("/w")
        await store.add_event(new.id, "childUsage", usage(3, 0.03))
        sessions, totals = await store.list_sessions_with_totals()
        assert totals == summed(path)
        assert totals["ses_b"]["costUsd"] == 0.25 and totals["ses_c"]["costUsd"] is None
        assert sessions == await store.list_sessions()

        await store.delete_session("ses_a")
        with sqlite3.connect(path) as db:
            kept = {row[0] for row in db.execute("SELECT session_id FROM session_usage")}
        assert kept == {new.id, "ses_b", "ses_c"}  # ses_a's went with it
        assert (await store.list_sessions_with_totals())[1] == summed(path)
    finally:
        await store.close()


async def test_listing_in_one_read_keeps_list_sessions_filters_and_order(tmp_path):
    store = await Store.open(tmp_path / "threadline.db")
    try:
        made = [await store.create_session(f"/w{i % 2}") for i in range(7)]
        child = await store.create_session("/w0", parent=(made[0].id, "call_1"))
        for cwd, limit, children in [(None, None, False), ("/w0", None, False), (None, 3, False), ("/w0", 2, True)]:
            sessions, totals = await store.list_sessions_with_totals(cwd, limit, children)
            assert sessions == await store.list_sessions(cwd, limit, children)
            assert totals == {}
        assert child.id in [s.id for s in (await store.list_sessions_with_totals(None, None, True))[0]]
    finally:
        await store.close()
