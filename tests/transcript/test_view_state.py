"""View snapshots (schema v10, renamed in v12; B-CACHE-3 cold start): the view state the store keeps as messages are
appended, so a long history no server has viewed opens without reading all of it. The store as the server opens it
(``open_store``: the real estimator and the real ``next_snapshots``) on a real SQLite file."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from server.agent.views import open_store
from server.context.incremental import IncrementalView
from server.context.tokens import estimate_message_tokens
from server.transcript import NewMessage, Store
from server.transcript.view_state import SNAPSHOT_EVERY, SNAPSHOTS_KEPT
from tests.conftest import long_history

pytestmark = pytest.mark.asyncio


def _new(msgs):
    return [
        NewMessage(m["role"], m.get("content"), tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id"))
        for m in msgs
    ]


async def _append(store: Store, sid: str, msgs, batch: int = 250) -> None:
    for i in range(0, len(msgs), batch):
        await store.append_messages(sid, _new(msgs[i : i + batch]))


async def test_B_CACHE_3_the_store_keeps_a_few_snapshots_each_the_head_a_full_state_has_there(tmp_path: Path):
    msgs = long_history(6 * SNAPSHOT_EVERY + 300)
    async with await open_store(tmp_path / "threadline.db") as store:
        sid = (await store.create_session("/w", "t")).id
        await _append(store, sid, msgs)
        points = await store.view_snapshots(sid)
        stored = await store.all_messages(sid)
    assert len(points) == SNAPSHOTS_KEPT
    seqs = [seq for seq, _, _ in points]
    assert seqs == sorted(seqs, reverse=True) and seqs[0] > len(msgs) - 2 * SNAPSHOT_EVERY
    # about SNAPSHOT_EVERY apart: each is the last segment start of the append that made it due
    assert all(SNAPSHOT_EVERY // 2 < a - b < 2 * SNAPSHOT_EVERY for a, b in itertools.pairwise(seqs))
    for seq, tokens, head in points:
        assert tokens == sum(m.tokens or 0 for m in stored if m.seq >= seq)
        full = IncrementalView()  # what a state fed every message up to the point's segment knows there
        upto = next(m.seq for m in stored if m.seq > seq and m.role != "tool")
        full.feed([m.to_openai() for m in stored if m.seq < upto], [m.tokens for m in stored if m.seq < upto])
        made = full.snapshot()
        assert made is not None and made[0] == seq and made[1].to_json() == head


async def test_B_CACHE_3_a_history_stored_before_snapshots_gets_none_from_an_append(tmp_path: Path):
    """Made from the previous snapshot, never from the whole history inside an append: a long session stored
    without any (by a version before schema v10, or a store opened without a snapshotter) gets none."""
    path = tmp_path / "threadline.db"
    msgs = long_history(3 * SNAPSHOT_EVERY)
    async with await Store.open(path) as plain:
        sid = (await plain.create_session("/w", "t")).id
        await _append(plain, sid, msgs)
    async with await open_store(path) as store:
        await _append(store, sid, long_history(2 * SNAPSHOT_EVERY))
        assert await store.view_snapshots(sid) == []


async def test_B_CACHE_3_a_fork_keeps_the_snapshots_of_what_it_copies_and_a_delete_drops_them(tmp_path: Path):
    async with await open_store(tmp_path / "threadline.db") as store:
        sid = (await store.create_session("/w", "t")).id
        await _append(store, sid, long_history(3 * SNAPSHOT_EVERY + 100))
        points = await store.view_snapshots(sid)
        cut = points[0][0] - 1  # before the newest point: the fork keeps the older ones only
        fork = await store.fork_session(sid, cut)
        assert await store.view_snapshots(fork.id) == [
            (seq, sum(m.tokens or 0 for m in await store.all_messages(fork.id) if m.seq >= seq), head)
            for seq, _, head in points[1:]
        ]
        await store.delete_session(sid)
    with sqlite3.connect(tmp_path / "threadline.db") as db:
        assert db.execute("SELECT COUNT(*) FROM view_snapshots WHERE session_id = ?", (sid,)).fetchone()[0] == 0


async def test_B_CACHE_3_a_damaged_snapshot_never_fails_an_append_and_is_not_built_on(tmp_path: Path):
    path = tmp_path / "threadline.db"
    async with await open_store(path) as store:
        sid = (await store.create_session("/w", "t")).id
        await _append(store, sid, long_history(SNAPSHOT_EVERY + 100))
        [(seq, _, _)] = await store.view_snapshots(sid)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE view_snapshots SET head = '{not json' WHERE session_id = ?", (sid,))
    async with await open_store(path) as store:
        await _append(store, sid, long_history(2 * SNAPSHOT_EVERY))  # appends still work, all of them
        assert (await store.get_session(sid)).message_count == 3 * SNAPSHOT_EVERY + 100
        points = await store.view_snapshots(sid)
    assert [(s, h) for s, _, h in points] == [(seq, None)]  # nothing chained on the damaged head


async def test_B_CACHE_3_a_whole_history_in_one_append_gets_snapshots_spread_over_it(tmp_path: Path):
    """An import in one append: the points kept are about ``SNAPSHOT_EVERY`` apart, so a view has one with a
    window of tokens after it (one at the end only would leave none)."""
    msgs = long_history(5 * SNAPSHOT_EVERY + 200)
    async with await open_store(tmp_path / "threadline.db") as store:
        sid = (await store.create_session("/w", "t")).id
        await store.append_messages(sid, _new(msgs))
        points = await store.view_snapshots(sid)
    seqs = [seq for seq, _, _ in points]
    assert len(seqs) == SNAPSHOTS_KEPT
    assert all(SNAPSHOT_EVERY // 2 < a - b < 2 * SNAPSHOT_EVERY for a, b in itertools.pairwise(seqs))
    assert points[-1][1] > 2 * 32_000  # the oldest kept leaves room for large windows after it


async def test_a_snapshotter_that_raises_never_fails_the_append_it_follows(tmp_path: Path):
    """The messages are committed before a snapshot is made: whatever goes wrong making one (here, a
    snapshotter that raises) leaves the append successful and every message stored."""

    def broken(head, messages, tokens, every):
        raise RuntimeError("no snapshot today")

    async with await Store.open(tmp_path / "threadline.db", view_snapshotter=broken) as store:
        sid = (await store.create_session("/w", "t")).id
        stored = await store.append_messages(sid, _new(long_history(SNAPSHOT_EVERY + 10)))
        assert len(stored) == SNAPSHOT_EVERY + 10
        assert len(await store.all_messages(sid)) == SNAPSHOT_EVERY + 10
        assert await store.view_snapshots(sid) == []


async def test_B_CACHE_3_a_store_keeps_view_snapshots_when_given_the_pipelines_snapshotter(tmp_path: Path):
    """A program writing a long history through ``open_store`` (the server's way to open the store, with the
    pipeline's snapshotter injected) leaves it quick to open; a store opened bare keeps none (the store
    does not import the pipeline)."""
    msgs = long_history(2 * SNAPSHOT_EVERY)
    counts = {}
    for name in ("open_store", "bare"):
        path = tmp_path / f"{name}.db"
        opened = open_store(path) if name == "open_store" else Store.open(path, estimate=estimate_message_tokens)
        async with await opened as store:
            sid = (await store.create_session("/w", "t")).id
            await _append(store, sid, msgs)
            counts[name] = len(await store.view_snapshots(sid))
    assert counts == {"open_store": 2, "bare": 0}
