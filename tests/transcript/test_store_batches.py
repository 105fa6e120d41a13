"""A model call's writes as one transaction, and the records a store keeps of its own appends (real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.context.tokens import estimate_message_tokens
from server.transcript import NewMessage, SessionNotFound, StorageFailure, Store


@pytest.fixture
async def store(tmp_path: Path):
    s = await Store.open(tmp_path / "threadline.db", estimate=estimate_message_tokens)
    yield s
    await s.close()


CALL = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}


async def test_B_CACHE_5_B_TOK_3_an_answer_its_usage_event_and_the_learned_factor_commit_together(store):
    sid = (await store.create_session("/w", "t")).id
    await store.save_draft(sid, "turn_1", "so far", None)
    usage = {"inputTokens": 120, "outputTokens": 7}
    stored = await store.append_messages(
        sid, [NewMessage("assistant", "", tool_calls=[CALL])], "turn_1", [("usage", usage)], [("m-a", 1.3, 2)]
    )
    (event,) = await store.list_events(sid, "usage")
    assert event.payload == usage and event.turn_id == "turn_1"
    assert event.created_at == stored[0].created_at  # one transaction, one stamp
    assert await store.load_calibrations() == [("m-a", 1.3, 2)]
    assert await store.recover_drafts(lambda owner: False) == []  # the answer's draft went with it


async def test_a_failing_write_in_the_batch_stores_neither_the_messages_nor_the_events(store):
    sid = (await store.create_session("/w", "t")).id
    with pytest.raises(TypeError):  # a payload that is not JSON fails inside the transaction, after the messages
        await store.append_messages(
            sid, [NewMessage("assistant", "answer")], "turn_1", [("usage", {"x": object()})], [("m-a", 1.3, 2)]
        )
    assert await store.all_messages(sid) == [] and await store.list_events(sid) == []
    assert await store.load_calibrations() == []
    assert (await store.get_session(sid)).message_count == 0
    with pytest.raises(SessionNotFound):
        await store.append_messages("ses_missing", [NewMessage("user", "hi")], None, [("usage", {"a": 1})])
    assert await store.list_events("ses_missing") == []
    await store.append_messages(sid, [NewMessage("user", "the next write works")])  # nothing was left open
    assert [m.seq for m in await store.all_messages(sid)] == [1]


async def test_B_INC_1_the_records_kept_of_an_append_are_the_ones_a_read_gives(store):
    sid = (await store.create_session("/w", "t")).id
    await store.append_messages(sid, [NewMessage("user", "one")])
    await store.append_messages(
        sid,
        [
            NewMessage("assistant", "", tool_calls=[CALL], reasoning="look", reasoning_items=[{"id": "r1"}]),
            NewMessage("tool", "print(1)", tool_call_id="c1", name="read_file", tool_status="ok"),
            NewMessage("user", "see", images=[{"mimeType": "image/png", "data": "AAAA"}]),
        ],
        "turn_1",
    )
    read = await store.all_messages(sid)
    assert store.appended_after(sid, 0) == read
    assert store.appended_after(sid, 2) == read[2:]
    assert store.appended_after(sid, 0) is None  # what a reader was given is not held any more
    assert store.appended_after(sid, 4) == []
    assert store.appended_after(sid, 5) is None  # past what it appended: not known here


async def test_B_INC_1_another_writers_appends_are_never_taken_as_known(tmp_path: Path, store):
    """A second store on the same file (another server sharing the data folder) appends between two appends of
    the first: the first never claims to know the messages after a seq it did not see being written."""
    other = await Store.open(tmp_path / "threadline.db", estimate=estimate_message_tokens)
    try:
        sid = (await store.create_session("/w", "t")).id
        await store.append_messages(sid, [NewMessage("user", "mine 1")])
        await other.append_messages(sid, [NewMessage("user", "theirs")])
        assert store.appended_after(sid, 1) == []  # it cannot know of seq 2 until it writes again
        await store.append_messages(sid, [NewMessage("user", "mine 2")])
        assert store.appended_after(sid, 1) is None  # seq 2 was not its own: read it
        assert [m.content for m in store.appended_after(sid, 2) or []] == ["mine 2"]
        await store.delete_session(sid)
        assert store.appended_after(sid, 2) is None
    finally:
        await other.close()


async def test_a_write_after_close_is_a_storage_failure(tmp_path: Path):
    s = await Store.open(tmp_path / "threadline.db")
    sid = (await s.create_session("/w", "t")).id
    await s.close()
    await s.close()  # twice does nothing
    with pytest.raises(StorageFailure):
        await s.append_messages(sid, [NewMessage("user", "late")])
