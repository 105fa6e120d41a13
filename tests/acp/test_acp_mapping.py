"""The pure ACP mapping: prompt blocks, permission outcomes, tool kinds, live updates and replay."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from acp import embedded_blob_resource, resource_block, text_block
from acp.schema import AllowedOutcome, AudioContentBlock, DeniedOutcome, RequestPermissionResponse

from protocol.updates import AnyUpdate, Update
from server.acp import permissions, tools
from server.acp.history import UNANSWERED, history_updates
from server.acp.prompt import user_message
from server.acp.updates import UpdateMapping
from server.errors import UnsupportedContent
from server.transcript import StoredMessage


def test_tool_kinds():
    assert [
        tools.tool_kind(n)
        for n in ("read_file", "edit_file", "search_files", "run_command", "web_fetch", "web_search", "mystery")
    ] == ["read", "edit", "search", "execute", "fetch", "fetch", "other"]
    assert [tools.tool_kind(n) for n in ("process_output", "stop_process")] == ["execute", "execute"]


def test_permission_outcomes_map_onto_decisions():
    def answer(outcome):
        return permissions.decision_of(RequestPermissionResponse(outcome=outcome))

    assert answer(AllowedOutcome(outcome="selected", option_id="allow_always")) == ("allowAlways", False)
    assert answer(AllowedOutcome(outcome="selected", option_id="reject_always")) == ("reject", True)
    assert answer(AllowedOutcome(outcome="selected", option_id="made_up")) == ("reject", False)
    assert answer(DeniedOutcome(outcome="cancelled")) == ("reject", False)
    assert [o.kind for o in permissions.OPTIONS] == ["allow_once", "allow_always", "reject_once", "reject_always"]


def test_a_binary_resource_is_named_not_inlined_and_audio_is_refused():
    text, images = user_message([text_block("hi"), resource_block(embedded_blob_resource("file:///x.bin", "AAAA"))])
    assert text.startswith("hi") and "file:///x.bin" in text and images == []
    with pytest.raises(UnsupportedContent):
        user_message([AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")])


def _update(raw: dict) -> Update:
    """An update as the loop emits it: typed (``protocol.updates``), from its wire form."""
    return msgspec.convert(raw, AnyUpdate)


def test_compactions_and_notices_are_agent_messages_marked_in_meta(tmp_path: Path):
    live = UpdateMapping(tmp_path)
    [compacted] = live.translate(
        _update(
            {"kind": "contextCompacted", "mode": "summarized", "beforeTokens": 900, "afterTokens": 200, "summary": "s"}
        )
    )
    assert compacted.session_update == "agent_message_chunk"
    assert compacted.field_meta["threadline"]["contextCompacted"]["afterTokens"] == 200
    [notice] = live.translate(_update({"kind": "notice", "level": "warning", "message": "retrying"}))
    assert notice.field_meta == {"threadline": {"notice": {"level": "warning"}}}
    assert live.translate(_update({"kind": "turnStarted"})) == []
    # a compaction that starts maps to nothing: ACP has no transient status, and the line above follows it
    assert live.translate(_update({"kind": "contextCompacting", "trigger": "auto", "beforeTokens": 900})) == []


def test_an_answer_that_was_not_streamed_is_sent_whole(tmp_path: Path):
    live = UpdateMapping(tmp_path)
    [whole] = live.translate(_update({"kind": "assistantMessage", "content": "all at once"}))
    assert whole.content.text == "all at once"
    live.translate(_update({"kind": "assistantDelta", "text": "streamed"}))
    assert live.translate(_update({"kind": "assistantMessage", "content": "streamed"})) == []


def test_replay_closes_a_call_whose_result_was_never_stored(tmp_path: Path):
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    stored = [
        StoredMessage(1, "system", "frozen", "t"),
        StoredMessage(2, "user", "q", "t"),
        StoredMessage(3, "assistant", "", "t", tool_calls=[call], reasoning="hm"),
    ]
    updates = list(history_updates(stored, tmp_path))
    assert [u.session_update for u in updates] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
    ]
    assert updates[-1].status == "failed" and updates[-1].content[0].content.text == UNANSWERED
    assert updates[2].locations[0].path == str(tmp_path / "a")


def test_usage_carries_the_session_cost_when_a_price_is_known(tmp_path: Path):
    live = UpdateMapping(tmp_path)
    base = {"kind": "usage", "contextTokens": 10, "contextWindowTokens": 100, "inputTokens": 10, "outputTokens": 1}
    [priced] = live.translate(_update({**base, "totals": {"inputTokens": 10, "costUsd": 0.25}}))
    assert (priced.used, priced.size, priced.cost.amount, priced.cost.currency) == (10, 100, 0.25, "USD")
    [unpriced] = live.translate(_update({**base, "totals": {"inputTokens": 10}}))
    assert unpriced.cost is None
