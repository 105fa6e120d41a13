"""The Anthropic Messages provider against the strict double (tests/fakes/fake_anthropic.py), over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from server.providers import ProviderError, ReasoningDelta, Retrying, StreamEvent, TextDelta
from server.providers.anthropic import AnthropicProvider
from tests.fakes.fake_anthropic import FakeAnthropic

KEY = "sk-ant-test-SECRET"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "read",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
START = [
    {"role": "system", "content": "You are Threadline."},
    {"role": "system", "content": "AGENTS.md: be brief"},
    {"role": "user", "content": "read a and b"},
]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=KEY) as f:
        yield f


def provider(fake, **options) -> AnthropicProvider:
    return AnthropicProvider(fake.url, KEY, "claude-sonnet-4-5", backoff_base=0.01, backoff_max=0.05, **options)


def as_view(messages, result):
    """The stored answer as the next view carries it (what the agent loop appends)."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in result.tool_calls
    ]
    msg = {"role": "assistant", "content": result.content, "tool_calls": calls}
    if result.reasoning_items:
        msg["reasoning_items"] = result.reasoning_items
    return [*messages, msg]


async def test_parallel_tool_calls_come_back_as_one_user_turn_of_results_the_api_accepts(fake):
    fake.push(
        {
            "tool_calls": [
                {"id": "toolu_a", "name": "read_file", "arguments": {"path": "a"}},
                {"id": "toolu_b", "name": "read_file", "arguments": {"path": "b"}},
            ]
        },
        {"content": "Both read."},
    )
    p = provider(fake)
    first = await p.stream_chat(START, TOOLS, None)
    assert [(c.id, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("toolu_a", {"path": "a"}),
        ("toolu_b", {"path": "b"}),
    ]
    assert first.finish_reason == "tool_calls"
    view = [
        *as_view(START, first),
        {"role": "tool", "tool_call_id": "toolu_a", "content": "A"},
        {"role": "tool", "tool_call_id": "toolu_b", "content": "B"},
    ]
    second = await p.stream_chat(view, TOOLS, None)
    assert second.content == "Both read." and second.finish_reason == "stop"
    sent = fake.requests[-1]
    assert not sent["rejected"], sent["error"]
    body = sent["body"]
    assert [b["text"] for b in body["system"]] == ["You are Threadline.", "AGENTS.md: be brief"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["tool_use_id"] for b in body["messages"][2]["content"]] == ["toolu_a", "toolu_b"]
    assert body["max_tokens"] > 0 and sent["headers"]["anthropic-version"]
    await p.aclose()


async def test_thinking_and_its_signature_go_back_unchanged_on_the_tool_use_continuation(fake):
    fake.push(
        {
            "thinking": "I should read the file.",
            "tool_calls": [{"id": "toolu_t", "name": "read_file", "arguments": {"path": "a"}}],
        },
        {"content": "Done."},
    )
    p = provider(fake, thinking_budget_tokens=1024)
    events: list[StreamEvent] = []
    first = await p.stream_chat(START, TOOLS, events.append)
    assert first.reasoning == "I should read the file." and first.content == ""
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == first.reasoning
    assert not any(isinstance(e, TextDelta) for e in events)  # thinking is never shown as text
    [item] = first.reasoning_items
    assert item["type"] == "thinking" and item["signature"]
    view = [*as_view(START, first), {"role": "tool", "tool_call_id": "toolu_t", "content": "A"}]
    second = await p.stream_chat(view, TOOLS, None)
    assert second.content == "Done."
    sent = fake.requests[-1]["body"]["messages"][1]["content"][0]
    assert (sent["type"], sent["thinking"], sent["signature"]) == ("thinking", item["thinking"], item["signature"])
    await p.aclose()


async def test_the_double_rejects_a_thinking_continuation_without_its_thinking_block(fake):
    p = provider(fake, thinking_budget_tokens=1024)
    body = p.request_body(
        [
            *START,
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "A"},
        ],
        TOOLS,
        None,
    )
    # the provider itself sends such a continuation without thinking rather than have it refused
    assert "thinking" not in body
    body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    import httpx

    async with httpx.AsyncClient() as client:
        answer = await client.post(
            f"{fake.url}/messages", json=body, headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        )
    assert answer.status_code == 400 and "must start with a thinking block" in answer.text
    await p.aclose()


async def test_cache_breakpoints_sit_on_the_last_system_block_and_the_last_message_and_the_next_call_reads_them(fake):
    fake.push({"tool_calls": [{"id": "toolu_1", "name": "read_file", "arguments": {"path": "a"}}]}, {"content": "ok"})
    p = provider(fake)
    first = await p.stream_chat(START, TOOLS, None)
    view = [*as_view(START, first), {"role": "tool", "tool_call_id": "toolu_1", "content": "A" * 400}]
    second = await p.stream_chat(view, TOOLS, None)
    body = fake.requests[-1]["body"]
    assert "cache_control" in body["system"][-1] and "cache_control" in body["messages"][-1]["content"][-1]
    marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
    assert len(marked) == 1
    assert first.usage is not None and second.usage is not None
    assert first.usage.cached_tokens == 0 and first.usage.cache_write_tokens > 0
    assert second.usage.cached_tokens == first.usage.prompt_tokens  # all the first request wrote is read back
    assert second.usage.cache_write_tokens > 0 and second.usage.reports_cache
    assert second.usage.prompt_tokens >= second.usage.cached_tokens + second.usage.cache_write_tokens
    await p.aclose()


async def test_prompt_is_too_long_is_the_context_too_long_kind():
    with FakeAnthropic(api_key=KEY, context_window=50) as fake:
        p = provider(fake)
        with pytest.raises(ProviderError) as caught:
            await p.stream_chat([*START, {"role": "user", "content": "x" * 2000}], TOOLS, None)
        assert caught.value.kind == "context_too_long" and "prompt is too long" in caught.value.message
        await p.aclose()


@pytest.mark.parametrize("status, kind", [(529, "overloaded_error"), (429, "rate_limit_error")])
async def test_overloaded_and_rate_limited_answers_are_retried_after_the_wait_asked(fake, status, kind):
    fake.push(
        {"error": {"status": status, "type": kind, "message": "slow down", "headers": {"retry-after": "0"}}},
        {"content": "here"},
    )
    events: list[StreamEvent] = []
    result = await provider(fake).stream_chat(START, None, events.append)
    assert result.content == "here"
    assert [type(e) for e in events if isinstance(e, Retrying)] == [Retrying]


async def test_an_overloaded_error_event_in_the_stream_is_retried_while_nothing_was_shown(fake):
    fake.push({"error": {"in_stream": True, "type": "overloaded_error", "message": "Overloaded"}}, {"content": "ok"})
    result = await provider(fake).stream_chat(START, None, None)
    assert result.content == "ok" and len(fake.requests) == 2


async def test_images_go_as_base64_image_blocks_and_a_wrong_key_is_an_auth_error(fake):
    image = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    await provider(fake).stream_chat([{"role": "user", "content": image}], None, None)
    block = fake.requests[-1]["body"]["messages"][0]["content"][1]
    assert block["type"] == "image" and block["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "iVBORw0KGgo=",
    }
    wrong = AnthropicProvider(fake.url, "sk-ant-wrong", "claude-sonnet-4-5")
    with pytest.raises(ProviderError) as caught:
        await wrong.stream_chat(START, None, None)
    assert caught.value.kind == "auth" and "sk-ant-wrong" not in caught.value.message
