"""B-SEARCH-1: full-text search over a real SQLite FTS5 table, with what people actually type."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.transcript import NewMessage, Store, fts

TEXTS = [
    "alpha beta gamma",
    "alpha only here",
    "beta only here",
    "the exact phrase lives in this one",
    "prefixation of words",
    "an unbalanced AND clause",
    'quotes "inside" text and (brackets)',
    "中文 上下文 压缩",
]


class SyncStore:
    """One store on one private event loop, shared by many hypothesis examples (opening per example is slow)."""

    def __init__(self, path: Path):
        self.loop = asyncio.new_event_loop()
        self.store = self.loop.run_until_complete(Store.open(path))
        self.sid = self.run(self.store.create_session("/w")).id
        self.run(self.store.append_messages(self.sid, [NewMessage(role="user", content=t) for t in TEXTS]))

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    def seqs(self, query: str) -> set[int]:
        return {h.seq for h in self.run(self.store.search(query))}

    def close(self) -> None:
        self.run(self.store.close())
        self.loop.close()


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Iterator[SyncStore]:
    s = SyncStore(tmp_path_factory.mktemp("fts") / "threadline.db")
    yield s
    s.close()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("alpha", {1, 2}),
        ("alpha AND beta", {1}),
        ("alpha OR beta", {1, 2, 3}),
        ("alpha NOT beta", {2}),
        ('"exact phrase"', {4}),
        ('"phrase exact"', set()),
        ("prefix*", {5}),
        ("ALPHA", {1, 2}),
        ("中文", {8}),
    ],
)
def test_B_SEARCH_1_fts_operators_a_user_types_work(db, query, expected):
    assert db.seqs(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"unbalanced AND (', {6}),
        ('quotes "inside', {7}),
        ("(brackets", {7}),
        ("alpha)", {1, 2}),
        # invalid syntax falls back to every word quoted, operator words included (fts.candidates)
        ("beta AND", set()),
        ("OR alpha", set()),
        ("NEAR(alpha", set()),
        ("text:alpha", {1, 2}),
        ("nocolumn:alpha", set()),
        ("^alpha", {1, 2}),
        ("-alpha", {1, 2}),
        ("alpha + ", {1, 2}),
        ("*", set()),
        ('"', set()),
        ("", set()),
        ("   ", set()),
        ("(((", set()),
    ],
)
def test_B_SEARCH_1_queries_with_stray_quotes_and_operators_never_fail(db, query, expected):
    assert db.seqs(query) == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sampled_from([*list("ab \"()*:^-+.{}'\\\x00é中"), "AND", "OR", "NOT", "NEAR", " alpha "]), max_size=12
    ).map("".join)
    | st.text(max_size=30)
)
def test_B_SEARCH_1_any_typed_query_returns_hits_or_nothing_never_an_error(db, query):
    hits = db.run(db.store.search(query))
    assert all(h.session_id == db.sid for h in hits)


def test_candidates_try_the_raw_query_first_then_quoted_words():
    assert fts.candidates('"unbalanced AND (') == ['"unbalanced AND (', '"unbalanced" "AND"']
    assert fts.candidates("plain") == ["plain", '"plain"']
    assert fts.candidates("  ()  ") == []


async def test_B_SEARCH_1_a_chinese_word_inside_a_real_sentence_is_found(tmp_path):
    from tests.conftest import KIMI, load_trajectory

    message = load_trajectory(KIMI)[130]  # "诊断日志已加好，现在来看你说的第二个问题…"
    assert "诊断日志已加好" in message["content"]
    store = await Store.open(tmp_path / "threadline.db")
    try:
        sid = (await store.create_session("/w")).id
        await store.append_messages(sid, [NewMessage(role="assistant", content=message["content"])])
        hits = await store.search("日志")
        assert [h.seq for h in hits] == [1]
        assert "[日志]" in hits[0].snippet
    finally:
        await store.close()
