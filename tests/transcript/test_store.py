"""The transcript store on real SQLite files: append-only messages, atomic writes, readers beside a writer."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import pytest

from server.context.tokens import estimate_message_tokens
from server.transcript import InvalidMessage, NewMessage, SessionNotFound, StorageFailure, Store
from server.transcript.records import MAX_PAGE
from server.transcript.store import WriteInRead, read_only
from tests.conftest import KIMI, load_trajectory


@pytest.fixture
async def store(tmp_path: Path):
    s = await Store.open(tmp_path / "threadline.db", estimate=estimate_message_tokens)
    yield s
    await s.close()


def user(text: str) -> NewMessage:
    return NewMessage(role="user", content=text)


async def test_R_SRC_1_appends_continue_the_sequence_and_read_back_unchanged(store):
    sid = (await store.create_session("/w", "t")).id
    first = await store.append_messages(sid, [user("one"), user("two")])
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    second = await store.append_messages(
        sid,
        [
            NewMessage(role="assistant", content="", tool_calls=[call], reasoning="look first"),
            NewMessage(role="tool", content="print(1)", tool_call_id="c1"),
            NewMessage(role="user", content="see", images=[{"mimeType": "image/png", "data": "AAAA"}]),
        ],
        turn_id="turn_1",
    )
    assert [m.seq for m in first + second] == [1, 2, 3, 4, 5]
    page = await store.read_messages(sid)
    assert page.next_seq is None
    assert [(m.seq, m.role, m.content) for m in page.items] == [
        (1, "user", "one"),
        (2, "user", "two"),
        (3, "assistant", ""),
        (4, "tool", "print(1)"),
        (5, "user", "see"),
    ]
    assert page.items[2].tool_calls == [call] and page.items[2].reasoning == "look first"
    assert page.items[3].tool_call_id == "c1" and page.items[3].turn_id == "turn_1"
    assert page.items[4].images == [{"mimeType": "image/png", "data": "AAAA"}]
    assert (await store.get_session(sid)).message_count == 5


async def test_B_INC_1_each_message_stores_its_token_estimate_when_written(store):
    sid = (await store.create_session("/w")).id
    stored = await store.append_messages(sid, [user("x" * 400)])
    [read] = (await store.read_messages(sid)).items
    assert read.tokens == stored[0].tokens == estimate_message_tokens(stored[0].to_openai())
    assert read.tokens > 0


async def test_an_invalid_message_in_a_batch_stores_none_of_the_batch(store):
    sid = (await store.create_session("/w")).id
    with pytest.raises(InvalidMessage, match=r"messages\[1\]\.tool_call_id"):
        await store.append_messages(sid, [user("ok"), NewMessage(role="tool", content="orphan")])
    assert (await store.read_messages(sid)).items == []
    assert (await store.get_session(sid)).message_count == 0


async def test_append_to_an_unknown_session_is_session_not_found(store):
    with pytest.raises(SessionNotFound):
        await store.append_messages("ses_missing", [user("x")])


async def test_read_messages_caps_the_page_size(store):
    sid = (await store.create_session("/w")).id
    await store.append_messages(sid, [user(str(i)) for i in range(MAX_PAGE + 5)])
    page = await store.read_messages(sid, limit=10 * MAX_PAGE)
    assert len(page.items) == MAX_PAGE and page.next_seq == MAX_PAGE
    rest = await store.read_messages(sid, after_seq=page.next_seq, limit=10 * MAX_PAGE)
    assert [m.seq for m in rest.items] == list(range(MAX_PAGE + 1, MAX_PAGE + 6)) and rest.next_seq is None


async def test_R_SRC_2_fork_copies_messages_and_search_rows_and_leaves_the_source_alone(store):
    messages = load_trajectory(KIMI)[:20]
    sid = (await store.create_session("/w", "kimi")).id
    await store.append_messages(
        sid,
        [
            NewMessage(
                role=m["role"], content=m["content"], tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id")
            )
            for m in messages
        ],
    )
    before = await store.all_messages(sid)
    fork = await store.fork_session(sid, at_seq=8)
    assert fork.parent_id == sid and fork.message_count == 8
    assert await store.all_messages(fork.id) == before[:8]
    assert await store.all_messages(sid) == before
    # new appends to the fork continue after atSeq and do not reach the source
    await store.append_messages(fork.id, [user("only in the fork: capybaric")])
    assert [m.seq for m in await store.all_messages(fork.id)][-1] == 9
    assert await store.all_messages(sid) == before
    assert {h.session_id for h in await store.search("capybaric")} == {fork.id}
    word = before[0].content.split()[0].strip("<>/")
    assert {h.session_id for h in await store.search(word)} >= {sid, fork.id}


async def test_delete_session_removes_its_rows_and_search_entries_only(store):
    keep = (await store.create_session("/w")).id
    gone = (await store.create_session("/w")).id
    await store.append_messages(keep, [user("shared marmotish word")])
    await store.append_messages(gone, [user("shared marmotish word")])
    await store.add_event(gone, "context.compacted", {"beforeTokens": 1})
    await store.delete_session(gone)
    with pytest.raises(SessionNotFound):
        await store.get_session(gone)
    assert [h.session_id for h in await store.search("marmotish")] == [keep]
    assert await store.list_events(gone) == []
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT count(*) FROM messages WHERE session_id = ?", (gone,)).fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM messages_fts").fetchone() == (1,)


async def test_concurrent_readers_see_only_whole_committed_batches_while_a_writer_commits(tmp_path):
    """A reader on the writer's store and a reader on a second store (another connection pair) never see a
    half-written batch or a ``database is locked`` error."""
    path = tmp_path / "threadline.db"
    writer = await Store.open(path)
    other = await Store.open(path)
    batch, batches = 7, 40
    try:
        sid = (await writer.create_session("/w")).id
        done = asyncio.Event()

        async def write() -> None:
            for b in range(batches):
                await writer.append_messages(sid, [user(f"b{b} m{i}") for i in range(batch)])
                await asyncio.sleep(0)
            done.set()

        async def read(store: Store) -> int:
            looks = 0
            while not done.is_set():
                messages = await store.all_messages(sid)
                assert len(messages) % batch == 0, "a reader saw part of a transaction"
                assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
                assert (await store.get_session(sid)).message_count >= len(messages)
                looks += 1
                await asyncio.sleep(0)
            return looks

        _, looks_same, looks_other = await asyncio.gather(write(), read(writer), read(other))
        assert looks_same > 0 and looks_other > 0
        assert len(await other.all_messages(sid)) == batch * batches
    finally:
        await writer.close()
        await other.close()


async def test_two_stores_writing_one_file_both_commit(tmp_path):
    """Two connections pairs (as two server processes would have) interleave writes without losing any."""
    path = tmp_path / "threadline.db"
    a, b = await Store.open(path), await Store.open(path)
    try:
        sa, sb = (await a.create_session("/w")).id, (await b.create_session("/w")).id

        async def fill(store: Store, sid: str) -> None:
            for i in range(30):
                await store.append_messages(sid, [user(f"{sid} {i}")])

        await asyncio.gather(fill(a, sa), fill(b, sb), fill(a, sb))
        assert len(await a.all_messages(sa)) == 30
        assert [m.seq for m in await b.all_messages(sb)] == list(range(1, 61))
    finally:
        await a.close()
        await b.close()


async def test_opening_under_a_path_that_cannot_be_a_folder_is_a_storage_failure_naming_it(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(StorageFailure, match="not-a-folder"):
        await Store.open(blocker / "threadline.db")


async def test_a_corrupt_database_file_is_a_storage_failure(tmp_path):
    path = tmp_path / "threadline.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageFailure):
        await Store.open(path)
    assert path.read_bytes() == b"this is not sqlite" * 100


async def test_a_cancelled_write_never_leaves_a_transaction_open_at_any_await_point(store):
    """A cancel landing while ``BEGIN IMMEDIATE`` was awaited skipped the ROLLBACK, and every later write
    failed with "cannot start a transaction within a transaction" until a restart. Cancel a write after 0, 1, 2 ...
    event-loop steps, until one completes uncancelled, and check after each that the store still writes."""
    session = await store.create_session("/tmp/cancel-points")
    steps, after = 0, []
    while True:
        task = asyncio.create_task(store.append_messages(session.id, [user(f"cancelled at step {steps}")]))
        for _ in range(steps):
            await asyncio.sleep(0)
        finished = task.done()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert not store._writer.in_transaction, f"a transaction was left open by a cancel at step {steps}"
        after.append(f"after step {steps}")
        await store.append_messages(session.id, [user(after[-1])])  # the next write works
        if finished or steps > 400:
            break
        steps += 1
    stored = [m.content for m in await store.all_messages(session.id)]
    assert [c for c in stored if c.startswith("after")] == after
    assert all(c.startswith(("after step", "cancelled at step")) for c in stored)


async def test_B_TOK_3_calibrations_are_kept_per_model_and_the_last_write_wins(tmp_path):
    """The learned calibration outlives the store (schema v8), one row per model, updated in place."""
    path = tmp_path / "t.db"
    store = await Store.open(path)
    try:
        assert await store.load_calibrations() == []
        await store.save_calibration("m-a", 1.25, 1)
        await store.save_calibration("m-b", 1.0, 3)
        await store.save_calibration("m-a", 1.5, 2)
    finally:
        await store.close()
    reopened = await Store.open(path)
    try:
        assert await reopened.load_calibrations() == [("m-a", 1.5, 2), ("m-b", 1.0, 3)]
    finally:
        await reopened.close()


def test_a_script_whose_store_block_raises_still_exits(tmp_path: Path):
    """aiosqlite's worker threads are not daemons: a process that raised before closing its store never exited.
    ``async with`` closes it on the way out, so the error is reported and the process ends."""
    import subprocess
    import sys

    script = (
        "import asyncio, sys\n"
        "from server.transcript import Store\n"
        "async def main():\n"
        f"    async with await Store.open({str(tmp_path / 'threadline.db')!r}) as store:\n"
        "        await store.create_session('/w', 't')\n"
        "        raise RuntimeError('the script failed half way')\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2]
    )
    assert done.returncode == 1 and "the script failed half way" in done.stderr


def test_a_new_database_appears_whole_so_a_second_server_never_sees_an_empty_file(tmp_path: Path):
    """SQLite creates a new database as a 0-byte file and writes its header a moment later; a second server
    starting then took it for a truncated store (the empty-store guard) and refused to start. It is made under a
    temporary name and linked into place instead; a second server that comes second keeps the first one's."""
    from server.transcript.db_file import create_whole, refuse_empty_file

    path = tmp_path / "threadline.db"
    create_whole(path)
    assert path.stat().st_size > 0
    refuse_empty_file(path)  # what a second server checks first: not an empty file
    first = path.read_bytes()
    create_whole(path)  # the second server, a moment later: the first one's file is kept as it is
    assert path.read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["threadline.db"]  # no temporary file left


def test_a_new_database_is_private_and_a_planted_temporary_name_is_not_followed(tmp_path: Path):
    """The temporary file a new database is made under was named by pid: a link planted under that name in the
    data folder would have had SQLite write through it, and two threads of one process shared it. The name is
    unique now (the attack below plants every name the old scheme could use for this process), and the database
    is readable by its user only."""
    import os
    import stat

    from server.transcript.db_file import create_whole

    victim = tmp_path / "victim.txt"
    victim.write_text("")
    path = tmp_path / "threadline.db"
    planted = tmp_path / f".{path.name}.{os.getpid()}.new"
    planted.symlink_to(victim)
    create_whole(path)
    assert victim.read_bytes() == b""  # nothing was written through the planted link
    assert path.stat().st_size > 0 and not path.is_symlink()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, planted.name, victim.name])


async def test_stores_opened_together_on_a_new_home_all_work(tmp_path: Path):
    path = tmp_path / "home" / "threadline.db"
    stores = await asyncio.gather(*(Store.open(path) for _ in range(4)))
    try:
        sid = (await stores[0].create_session("/w", "t")).id
        assert [s.id for s in await stores[3].list_sessions()] == [sid]
    finally:
        for s in stores:
            await s.close()


async def test_issue_29_a_write_inside_a_read_fails_and_writes_nothing(store):
    """The edge runs every read handler under ``read_only``: a write there is a bug and fails loudly, in the tasks
    the read starts too; reads still work, and writes work again after it."""
    sid = (await store.create_session("/w", "t")).id
    with read_only("getContextView"):
        with pytest.raises(WriteInRead, match="getContextView"):
            await store.append_messages(sid, [user("one")])
        with pytest.raises(WriteInRead):
            await asyncio.create_task(store.add_event(sid, "notice", {"message": "x"}))
        assert (await store.read_messages(sid)).items == []
    assert [m.seq for m in await store.append_messages(sid, [user("one")])] == [1]
