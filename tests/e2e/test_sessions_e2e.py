"""Session methods end to end: a real ``python -m server`` over stdio, a real SQLite file in a temp home.

One server serves the module (each test makes its own sessions and looks only at them); the restart test
starts its own servers on its own home.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from server.cli.client import Client, RpcError
from tests.conftest import KIMI, MINI_SWE, load_trajectory
from tests.harness import running_client, start_client

pytestmark = pytest.mark.asyncio(loop_scope="module")

# A 1x1 transparent PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


async def read_all(rpc: Client, session_id: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Every item of a session, following ``nextSeq``."""
    items: list[dict[str, Any]] = []
    after = None
    while True:
        page = await rpc.request("readTranscript", {"sessionId": session_id, "afterSeq": after, "limit": limit})
        items += page["items"]
        if page.get("nextSeq") is None:
            return items
        after = page["nextSeq"]


async def import_messages(rpc: Client, cwd: Path, messages: list[dict], title: str = "t") -> str:
    result = await rpc.request("importSession", {"cwd": str(cwd), "title": title, "messages": messages})
    assert result["messageCount"] == len(messages)
    return result["sessionId"]


async def session_ids(rpc: Client) -> set[str]:
    return {s["sessionId"] for s in (await rpc.request("listSessions", {}))["sessions"]}


def as_item(msg: dict[str, Any]) -> dict[str, Any]:
    """What ``readTranscript`` should show for an imported plain-text OpenAI message."""
    item = {"role": msg["role"], "content": msg.get("content")}
    if msg.get("tool_calls"):
        item["toolCalls"] = msg["tool_calls"]
    if msg.get("tool_call_id") is not None:
        item["toolCallId"] = msg["tool_call_id"]
    return item


def expect_rpc_error(exc: pytest.ExceptionInfo[RpcError], code: int, data_code: str | None = None) -> None:
    assert exc.value.code == code, exc.value
    if data_code is not None:
        assert (exc.value.data or {}).get("code") == data_code, exc.value.data


# --- create / list ----------------------------------------------------------------------------------------


async def test_create_session_then_list_shows_it_with_every_protocol_field(module_rpc, tmp_path):
    sid = (await module_rpc.request("createSession", {"cwd": str(tmp_path), "title": "Fix the parser"}))["sessionId"]
    sessions = (await module_rpc.request("listSessions", {"cwd": str(tmp_path)}))["sessions"]
    assert [s["sessionId"] for s in sessions] == [sid]
    info = sessions[0]
    assert info["title"] == "Fix the parser"
    assert info["cwd"] == str(tmp_path.resolve())
    assert info["messageCount"] == 0
    assert info["createdAt"] and info["updatedAt"]


async def test_list_sessions_filters_by_cwd_and_honours_limit_newest_first(module_rpc, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    first = (await module_rpc.request("createSession", {"cwd": str(a)}))["sessionId"]
    second = await import_messages(module_rpc, a, [{"role": "user", "content": "hi"}])
    other = (await module_rpc.request("createSession", {"cwd": str(b)}))["sessionId"]
    in_a = (await module_rpc.request("listSessions", {"cwd": str(a)}))["sessions"]
    assert [s["sessionId"] for s in in_a] == [second, first]
    assert other not in [s["sessionId"] for s in in_a]
    limited = (await module_rpc.request("listSessions", {"cwd": str(a), "limit": 1}))["sessions"]
    assert [s["sessionId"] for s in limited] == [second]


async def test_create_session_in_a_missing_folder_is_invalid_params(module_rpc, tmp_path):
    with pytest.raises(RpcError) as exc:
        await module_rpc.request("createSession", {"cwd": str(tmp_path / "nope")})
    expect_rpc_error(exc, -32602, "InvalidCwd")


# --- import / read ----------------------------------------------------------------------------------------


async def test_R_SRC_1_import_real_trajectory_stores_every_message_unchanged_in_order(module_rpc, tmp_path):
    messages = load_trajectory(KIMI)
    sid = await import_messages(module_rpc, tmp_path, messages, "kimi")
    items = await read_all(module_rpc, sid)
    assert [i["seq"] for i in items] == list(range(1, len(messages) + 1))
    assert [{k: i[k] for k in as_item(m)} for i, m in zip(items, messages, strict=True)] == [
        as_item(m) for m in messages
    ]
    info = next(s for s in (await module_rpc.request("listSessions", {}))["sessions"] if s["sessionId"] == sid)
    assert info["messageCount"] == len(messages)


async def test_read_transcript_paging_by_after_seq_and_limit_returns_every_message_exactly_once(module_rpc, tmp_path):
    messages = load_trajectory(MINI_SWE)  # 378 messages: pages of 50 leave a short last page
    sid = await import_messages(module_rpc, tmp_path, messages, "mini-swe")
    seen: list[int] = []
    after = None
    while True:
        page = await module_rpc.request("readTranscript", {"sessionId": sid, "afterSeq": after, "limit": 50})
        seqs = [i["seq"] for i in page["items"]]
        assert 0 < len(seqs) <= 50
        seen += seqs
        if page.get("nextSeq") is None:
            break
        assert page["nextSeq"] == seqs[-1], "nextSeq is the afterSeq of the next page"
        after = page["nextSeq"]
    assert seen == list(range(1, len(messages) + 1))
    tail = await module_rpc.request("readTranscript", {"sessionId": sid, "afterSeq": len(messages)})
    assert tail == {"items": []}


async def test_import_exact_page_boundary_has_no_dangling_next_seq(module_rpc, tmp_path):
    sid = await import_messages(module_rpc, tmp_path, [{"role": "user", "content": str(n)} for n in range(4)])
    page = await module_rpc.request("readTranscript", {"sessionId": sid, "limit": 2})
    assert page["nextSeq"] == 2
    page = await module_rpc.request("readTranscript", {"sessionId": sid, "afterSeq": 2, "limit": 2})
    assert [i["seq"] for i in page["items"]] == [3, 4] and "nextSeq" not in page


async def test_R_SRC_3_import_keeps_reasoning_content_as_reasoning_on_the_item(module_rpc, tmp_path):
    messages = copy.deepcopy(load_trajectory(MINI_SWE)[:3])
    assert messages[2]["role"] == "assistant"
    messages[2]["reasoning_content"] = "The loader drops __init__.py; check modutils first."
    sid = await import_messages(module_rpc, tmp_path, messages)
    items = await read_all(module_rpc, sid)
    assert items[2]["reasoning"] == "The loader drops __init__.py; check modutils first."
    assert items[2]["content"] == messages[2]["content"]
    assert "reasoning" not in items[0] and "reasoning" not in items[1]


async def test_import_images_in_content_parts_round_trip_as_images(module_rpc, tmp_path):
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this screenshot?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        },
        {"role": "assistant", "content": "A single transparent pixel."},
    ]
    sid = await import_messages(module_rpc, tmp_path, messages)
    items = await read_all(module_rpc, sid)
    assert items[0]["content"] == "What is in this screenshot?"
    assert items[0]["images"] == [{"mimeType": "image/png", "data": PNG}]
    assert "images" not in items[1]


# --- search -----------------------------------------------------------------------------------------------


async def test_B_SEARCH_1_search_finds_imported_text_and_filters_by_session_id(module_rpc, tmp_path):
    word = "zebracorn"
    one = await import_messages(module_rpc, tmp_path, [{"role": "user", "content": f"the {word} config is broken"}])
    two = await import_messages(
        module_rpc,
        tmp_path,
        [
            {"role": "user", "content": "look at it"},
            {"role": "assistant", "content": f"I found the {word} flag in setup.cfg"},
        ],
    )
    hits = (await module_rpc.request("searchTranscript", {"query": word}))["hits"]
    assert {(h["sessionId"], h["seq"], h["role"]) for h in hits} == {(one, 1, "user"), (two, 2, "assistant")}
    assert all(f"[{word}]" in h["snippet"] for h in hits)
    only = (await module_rpc.request("searchTranscript", {"query": word, "sessionId": two}))["hits"]
    assert [(h["sessionId"], h["seq"]) for h in only] == [(two, 2)]


async def test_B_SEARCH_1_search_finds_tool_call_arguments_of_a_real_trajectory(module_rpc, tmp_path):
    messages = load_trajectory(MINI_SWE)
    sid = await import_messages(module_rpc, tmp_path, messages)
    hits = (await module_rpc.request("searchTranscript", {"query": "modutils", "sessionId": sid, "limit": 5}))["hits"]
    assert 0 < len(hits) <= 5
    for h in hits:
        source = messages[h["seq"] - 1]
        assert "modutils" in (str(source.get("content")) + str(source.get("tool_calls"))).lower()


async def test_B_SEARCH_1_search_with_unbalanced_quotes_and_operators_does_not_fail(module_rpc, tmp_path):
    sid = await import_messages(module_rpc, tmp_path, [{"role": "user", "content": "an unbalanced AND clause"}])
    for query in ['"unbalanced AND (', "AND", "(", '""', "NEAR(", "*", "text:", "-"]:
        result = await module_rpc.request("searchTranscript", {"query": query, "sessionId": sid})
        assert isinstance(result["hits"], list), query
    hits = (await module_rpc.request("searchTranscript", {"query": '"unbalanced AND (', "sessionId": sid}))["hits"]
    assert [h["seq"] for h in hits] == [1]


# --- fork / delete ----------------------------------------------------------------------------------------


async def test_R_SRC_2_fork_copies_up_to_at_seq_and_leaves_original_untouched(module_rpc, tmp_path):
    messages = load_trajectory(KIMI)
    sid = await import_messages(module_rpc, tmp_path, messages)
    before = await read_all(module_rpc, sid)
    fork = (await module_rpc.request("forkSession", {"sessionId": sid, "atSeq": 40}))["sessionId"]
    assert fork != sid
    forked = await read_all(module_rpc, fork)
    strip = lambda items: [{k: v for k, v in i.items() if k != "createdAt"} for i in items]  # noqa: E731
    assert strip(forked) == strip(before[:40])
    assert await read_all(module_rpc, sid) == before
    sessions = {s["sessionId"]: s for s in (await module_rpc.request("listSessions", {}))["sessions"]}
    assert sessions[fork]["parentSessionId"] == sid
    assert sessions[fork]["messageCount"] == 40
    assert sessions[sid]["messageCount"] == len(messages)


async def test_R_SRC_2_fork_without_at_seq_copies_everything_and_is_searchable(module_rpc, tmp_path):
    sid = await import_messages(
        module_rpc,
        tmp_path,
        [{"role": "user", "content": "remember the quokkapass"}, {"role": "assistant", "content": "noted"}],
    )
    fork = (await module_rpc.request("forkSession", {"sessionId": sid}))["sessionId"]
    assert [i["content"] for i in await read_all(module_rpc, fork)] == ["remember the quokkapass", "noted"]
    hits = (await module_rpc.request("searchTranscript", {"query": "quokkapass"}))["hits"]
    assert {h["sessionId"] for h in hits} == {sid, fork}


async def test_R_SRC_2_deleting_the_original_leaves_its_fork_intact(module_rpc, tmp_path):
    sid = await import_messages(module_rpc, tmp_path, [{"role": "user", "content": "wombatine request"}])
    fork = (await module_rpc.request("forkSession", {"sessionId": sid}))["sessionId"]
    await module_rpc.request("deleteSession", {"sessionId": sid})
    assert [i["content"] for i in await read_all(module_rpc, fork)] == ["wombatine request"]
    hits = (await module_rpc.request("searchTranscript", {"query": "wombatine"}))["hits"]
    assert [h["sessionId"] for h in hits] == [fork]


async def test_delete_session_removes_it_and_a_second_delete_is_session_not_found(module_rpc, tmp_path):
    sid = await import_messages(module_rpc, tmp_path, [{"role": "user", "content": "platypusoid"}])
    assert await module_rpc.request("deleteSession", {"sessionId": sid}) == {}
    assert sid not in await session_ids(module_rpc)
    assert (await module_rpc.request("searchTranscript", {"query": "platypusoid"}))["hits"] == []
    with pytest.raises(RpcError) as exc:
        await module_rpc.request("deleteSession", {"sessionId": sid})
    expect_rpc_error(exc, -32602, "SessionNotFound")


# --- errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("readTranscript", {"sessionId": "ses_missing"}),
        ("forkSession", {"sessionId": "ses_missing", "atSeq": 1}),
        ("deleteSession", {"sessionId": "ses_missing"}),
        ("searchTranscript", {"query": "x", "sessionId": "ses_missing"}),
    ],
)
async def test_unknown_session_is_invalid_params_with_session_not_found(module_rpc, method, params):
    with pytest.raises(RpcError) as exc:
        await module_rpc.request(method, params)
    expect_rpc_error(exc, -32602, "SessionNotFound")
    assert "ses_missing" in exc.value.message


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("createSession", {}, "cwd"),
        ("createSession", {"cwd": 7}, "cwd"),
        ("readTranscript", {"sessionId": 5}, "sessionId"),
        ("readTranscript", {"sessionId": "ses_x", "limit": "ten"}, "limit"),
        ("searchTranscript", {"sessionId": "ses_x"}, "query"),
        ("forkSession", {"sessionId": "ses_x", "atSeq": "3"}, "atSeq"),
        ("listSessions", {"limit": [1]}, "limit"),
        ("importSession", {"cwd": "/tmp", "messages": "hello"}, "messages"),
    ],
)
async def test_malformed_params_are_invalid_params_naming_the_field(module_rpc, method, params, field):
    with pytest.raises(RpcError) as exc:
        await module_rpc.request(method, params)
    expect_rpc_error(exc, -32602)
    assert field in exc.value.message


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"role": "robot", "content": "beep"}, "role"),
        ({"role": "tool", "content": "output without a call id"}, "tool_call_id"),
        (
            {
                "role": "user",
                "content": "x",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            "tool_calls",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}]},
            "arguments",
        ),
        ({"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}, "content"),
        ({"role": "user", "content": 42}, "content"),
        ({"content": "no role"}, "role"),
    ],
)
async def test_import_with_invalid_role_or_shape_is_invalid_params_and_stores_nothing(module_rpc, tmp_path, bad, field):
    before = await session_ids(module_rpc)
    messages = [{"role": "user", "content": "fine"}, bad]
    with pytest.raises(RpcError) as exc:
        await module_rpc.request("importSession", {"cwd": str(tmp_path), "messages": messages})
    expect_rpc_error(exc, -32602)
    assert field in exc.value.message and "messages[1]" in exc.value.message, exc.value.message
    assert await session_ids(module_rpc) == before


# --- persistence ------------------------------------------------------------------------------------------


async def test_R_SRC_1_sessions_and_messages_survive_a_server_restart(home, tmp_path):
    messages = load_trajectory(KIMI)[:30]
    first = await start_client(home)
    try:
        sid = await import_messages(first, tmp_path, messages, "before restart")
        fork = (await first.request("forkSession", {"sessionId": sid, "atSeq": 10}))["sessionId"]
        before = await read_all(first, sid)
    finally:
        assert await first.close() == 0
    async with running_client(home) as second:
        assert await read_all(second, sid) == before
        assert len(await read_all(second, fork)) == 10
        titles = {s["sessionId"]: s["title"] for s in (await second.request("listSessions", {}))["sessions"]}
        assert titles[sid] == "before restart"
        word = "Makefile"
        assert (await second.request("searchTranscript", {"query": word, "sessionId": sid}))["hits"]
