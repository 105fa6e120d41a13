"""The OpenAI Responses provider against the strict double (tests/fakes/fake_responses.py), over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from server.providers import ProviderError, ReasoningDelta, StreamEvent
from server.providers.responses import ResponsesProvider
from tests.fakes.fake_responses import FakeResponses
from tests.providers.test_anthropic import START, TOOLS, as_view

KEY = "sk-resp-test-SECRET"


@pytest.fixture
def fake() -> Iterator[FakeResponses]:
    with FakeResponses(api_key=KEY) as f:
        yield f


def provider(fake) -> ResponsesProvider:
    return ResponsesProvider(fake.url, KEY, "gpt-5-codex", backoff_base=0.01, backoff_max=0.05)


async def test_a_tool_turn_sends_function_calls_and_outputs_with_no_server_side_state(fake):
    fake.push(
        {
            "tool_calls": [
                {"id": "call_a", "name": "read_file", "arguments": {"path": "a"}},
                {"id": "call_b", "name": "read_file", "arguments": {"path": "b"}},
            ]
        },
        {"content": "Both read."},
    )
    p = provider(fake)
    first = await p.stream_chat(START, TOOLS, None, cache_key="ses_1")
    assert [(c.id, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("call_a", {"path": "a"}),
        ("call_b", {"path": "b"}),
    ]
    view = [
        *as_view(START, first),
        {"role": "tool", "tool_call_id": "call_a", "content": "A"},
        {"role": "tool", "tool_call_id": "call_b", "content": "B"},
    ]
    second = await p.stream_chat(view, TOOLS, None, cache_key="ses_1")
    assert second.content == "Both read."
    sent = fake.requests[-1]
    assert not sent["rejected"], sent["error"]
    body = sent["body"]
    assert body["store"] is False and body["prompt_cache_key"] == "ses_1"
    assert [i["type"] for i in body["input"]][-4:] == [
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert second.usage is not None
    assert second.usage.reports_cache and second.usage.cached_tokens > 0  # the first request's items were cached
    await p.aclose()


async def test_reasoning_items_go_back_encrypted_before_the_call_they_led_to(fake):
    fake.push(
        {
            "reasoning": "Look at a first.",
            "tool_calls": [{"id": "call_r", "name": "read_file", "arguments": {"path": "a"}}],
        },
        {"content": "ok"},
    )
    p = provider(fake)
    events: list[StreamEvent] = []
    first = await p.stream_chat(START, TOOLS, events.append)
    assert first.reasoning == "Look at a first." and first.content == ""
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["Look at a first."]
    [item] = first.reasoning_items
    assert item["type"] == "reasoning" and item["encrypted_content"]
    view = [*as_view(START, first), {"role": "tool", "tool_call_id": "call_r", "content": "A"}]
    assert (await p.stream_chat(view, TOOLS, None)).content == "ok"
    # without the reasoning item the double refuses, as the API does
    bare = [m if m.get("role") != "assistant" else {k: v for k, v in m.items() if k != "reasoning_items"} for m in view]
    with pytest.raises(ProviderError) as caught:
        await p.stream_chat(bare, TOOLS, None)
    assert caught.value.kind == "bad_request" and "required 'reasoning' item" in caught.value.message
    await p.aclose()


async def test_an_input_over_the_window_is_the_context_too_long_kind():
    with FakeResponses(api_key=KEY, context_window=40) as fake:
        with pytest.raises(ProviderError) as caught:
            await provider(fake).stream_chat([*START, {"role": "user", "content": "x" * 2000}], TOOLS, None)
        assert caught.value.kind == "context_too_long"


async def test_a_failed_response_event_and_a_server_error_are_retried_before_anything_was_shown(fake):
    fake.push(
        {"error": {"status": 500, "message": "boom"}},
        {"error": {"in_stream": True, "code": "server_error", "message": "failed"}},
        {"content": "ok"},
    )
    assert (await provider(fake).stream_chat(START, None, None)).content == "ok"
    assert len(fake.requests) == 3
