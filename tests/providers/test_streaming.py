"""The provider client assembles real streamed answers from the model-service double."""

from __future__ import annotations

import asyncio
import json

import pytest

from server.providers import ChatProvider, ProviderError, ReasoningDelta, StreamEvent, TextDelta, ToolCall, Usage

USER = [{"role": "user", "content": "hello"}]
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}}}]


async def test_streams_text_deltas_in_order_and_assembles_the_content(fake_provider, make_provider):
    fake_provider.push({"content": "Hello, world!", "chunks": 4})
    events: list[StreamEvent] = []
    result = await make_provider(own_client=True).stream_chat(USER, None, events.append)
    assert result.content == "Hello, world!"
    assert [type(e) for e in events] == [TextDelta] * 4
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello, world!"
    assert result.finish_reason == "stop"
    assert result.tool_calls == [] and result.reasoning == ""


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_streams_reasoning_from_either_field_before_text(fake_provider, make_provider, field):
    fake_provider.push({"reasoning": "let me think", "content": "42", "reasoning_field": field})
    events: list[StreamEvent] = []
    result = await make_provider().stream_chat(USER, None, events.append)
    assert result.reasoning == "let me think" and result.content == "42"
    kinds = [type(e) for e in events]
    assert kinds.index(TextDelta) > max(i for i, k in enumerate(kinds) if k is ReasoningDelta)


async def test_joins_tool_call_fragments_by_index(fake_provider, make_provider):
    fake_provider.push(
        {
            "content": "Reading both.",
            "arg_chunks": 5,
            "tool_calls": [
                {"id": "call_1", "name": "read_file", "arguments": {"path": "a.txt"}},
                {"id": "call_2", "name": "read_file", "arguments": {"path": "b/ü.txt"}},
            ],
        }
    )
    result = await make_provider().stream_chat(USER, TOOLS, None)
    assert [(c.id, c.name) for c in result.tool_calls] == [("call_1", "read_file"), ("call_2", "read_file")]
    assert [json.loads(c.arguments) for c in result.tool_calls] == [{"path": "a.txt"}, {"path": "b/ü.txt"}]
    assert result.finish_reason == "tool_calls"
    assert result.content == "Reading both."


@pytest.mark.parametrize("style", ["whole", "no_index"])
async def test_takes_tool_calls_sent_whole_or_without_an_index(fake_provider, make_provider, style):
    fake_provider.push(
        {
            "tool_call_style": style,
            "tool_calls": [
                {"id": "call_1", "name": "read_file", "arguments": {"path": "a.txt"}},
                {"id": "call_2", "name": "list_files", "arguments": {}},
            ],
        }
    )
    result = await make_provider().stream_chat(USER, TOOLS, None)
    assert result.tool_calls == [
        ToolCall("call_1", "read_file", '{"path": "a.txt"}'),
        ToolCall("call_2", "list_files", "{}"),
    ]


async def test_tool_call_arguments_stay_the_raw_streamed_string(fake_provider, make_provider):
    raw = '{"path":  "a.txt" , "n": 1}'
    fake_provider.push({"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": raw}]})
    result = await make_provider().stream_chat(USER, TOOLS, None)
    assert result.tool_calls[0].arguments == raw


async def test_reports_the_usage_of_the_final_chunk(fake_provider, make_provider):
    fake_provider.push({"content": "hi", "usage": {"prompt_tokens": 1234, "completion_tokens": 5}})
    result = await make_provider().stream_chat(USER, None, None)
    assert result.usage == Usage(prompt_tokens=1234, completion_tokens=5, total_tokens=1239, reports_cache=True)


async def test_sends_stream_true_with_include_usage_and_tools_only_when_given(fake_provider, make_provider):
    provider = make_provider()
    await provider.stream_chat(USER, TOOLS, None)
    await provider.stream_chat(USER, [], None)  # the double, like OpenAI, rejects an empty tools list
    with_tools, without = (r["body"] for r in fake_provider.requests)
    assert with_tools["stream"] is True and with_tools["stream_options"] == {"include_usage": True}
    assert with_tools["tools"] == TOOLS and with_tools["tool_choice"] == "auto"
    assert with_tools["model"] == "fake-model" and with_tools["messages"] == USER
    assert "tools" not in without and "tool_choice" not in without


async def test_sends_bearer_auth_only_when_a_key_is_set(fake_provider_factory, make_provider):
    keyed = fake_provider_factory(api_key="sk-secret")
    await make_provider(keyed.url, api_key="sk-secret").stream_chat(USER, None, None)
    assert keyed.requests[0]["headers"]["authorization"] == "<redacted>"
    open_fake = fake_provider_factory()
    await make_provider(open_fake.url, api_key=None).stream_chat(USER, None, None)
    assert "authorization" not in open_fake.requests[0]["headers"]


async def test_sends_extra_headers(fake_provider, make_provider):
    await make_provider(extra_headers={"HTTP-Referer": "https://threadline.dev"}).stream_chat(USER, None, None)
    assert fake_provider.requests[0]["headers"]["http-referer"] == "https://threadline.dev"


async def test_tolerates_a_trailing_slash_on_the_base_url(fake_provider, make_provider):
    result = await make_provider(fake_provider.url + "/").stream_chat(USER, None, None)
    assert result.content == "Echo: hello"


async def test_awaits_an_async_on_event_callback(fake_provider, make_provider):
    fake_provider.push({"content": "abc", "chunks": 3})
    seen = []

    async def on_event(event):
        await asyncio.sleep(0)
        seen.append(event.text)

    await make_provider().stream_chat(USER, None, on_event)
    assert seen == ["a", "b", "c"]


async def test_takes_a_plain_json_answer_from_a_server_that_ignores_stream(fake_provider, make_provider):
    fake_provider.push(
        {
            "no_stream": True,
            "reasoning": "hmm",
            "content": "plain answer",
            "tool_calls": [{"id": "call_9", "name": "read_file", "arguments": {"path": "x"}}],
        }
    )
    events: list[StreamEvent] = []
    result = await make_provider().stream_chat(USER, TOOLS, events.append)
    assert result.content == "plain answer" and result.reasoning == "hmm"
    assert result.tool_calls == [ToolCall("call_9", "read_file", '{"path": "x"}')]
    assert result.usage is not None and result.finish_reason == "tool_calls"
    assert events == [ReasoningDelta("hmm"), TextDelta("plain answer")]


async def test_reads_a_close_delimited_stream(fake_provider, make_provider):
    fake_provider.push({"content": "no chunked framing", "framing": "close"})
    result = await make_provider().stream_chat(USER, None, None)
    assert result.content == "no chunked framing"


async def test_falls_back_once_without_stream_options_and_remembers(fake_provider_factory, make_provider):
    fake = fake_provider_factory(reject_stream_options=True)
    provider = make_provider(fake.url)
    events: list[StreamEvent] = []
    first = await provider.stream_chat(USER, None, events.append)
    second = await provider.stream_chat(USER, None, None)
    assert first.content == second.content == "Echo: hello"
    assert first.usage is None  # without stream_options the server sends no usage chunk
    assert [("stream_options" in r["body"], r["rejected"]) for r in fake.requests] == [
        (True, True),
        (False, False),
        (False, False),
    ]
    assert all(isinstance(e, TextDelta) for e in events)  # the fallback is not a Retrying


async def test_empty_choices_is_an_empty_error_and_not_retried(fake_provider, make_provider):
    fake_provider.push({"empty_choices": True})
    with pytest.raises(ProviderError) as caught:
        await make_provider().stream_chat(USER, None, None)
    assert caught.value.kind == "empty"
    assert len(fake_provider.requests) == 1


async def test_malformed_chunk_is_a_malformed_error_with_the_partial_text(fake_provider, make_provider):
    fake_provider.push({"content": "Hi there", "malformed_chunk": True})
    with pytest.raises(ProviderError) as caught:
        await make_provider().stream_chat(USER, None, None)
    assert caught.value.kind == "malformed"
    assert caught.value.partial is not None
    assert caught.value.partial.content == "Hi there"
    assert len(fake_provider.requests) == 1


async def test_implements_the_chat_provider_protocol(make_provider):
    provider = make_provider()
    assert isinstance(provider, ChatProvider)
    assert provider.model == "fake-model"
    assert "sk-" not in repr(make_provider(api_key="sk-hidden"))


async def test_reads_past_done_so_the_next_call_reuses_the_connection(fake_provider, make_provider):
    provider = make_provider()
    await provider.stream_chat(USER, None, None)
    await provider.stream_chat(USER, None, None)
    first, second = fake_provider.requests
    assert first["peer_port"] == second["peer_port"]


async def test_B_CACHE_5_cached_tokens_come_from_openai_prompt_tokens_details(fake_provider, make_provider):
    fake_provider.push(
        {
            "content": "hi",
            "usage": {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 768, "audio_tokens": 0}},
        }
    )
    result = await make_provider().stream_chat(USER, None, None)
    assert result.usage.cached_tokens == 768 and result.usage.reports_cache


async def test_B_CACHE_5_cached_tokens_come_from_deepseek_prompt_cache_hit_tokens(fake_provider_factory, make_provider):
    fake = fake_provider_factory(cache_style="deepseek")
    fake.push(
        {
            "content": "hi",
            "usage": {"prompt_tokens": 1000, "prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 360},
        }
    )
    result = await make_provider(fake.url).stream_chat(USER, None, None)
    assert result.usage.cached_tokens == 640 and result.usage.reports_cache


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 10},
        {"prompt_tokens": 10, "prompt_tokens_details": None},
        {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": None}},
        {"prompt_tokens": 10, "prompt_tokens_details": "odd", "prompt_cache_hit_tokens": None},
    ],
)
async def test_B_CACHE_5_absent_or_null_cache_fields_give_0(fake_provider_factory, make_provider, usage):
    fake = fake_provider_factory(cache_style="none")
    fake.push({"content": "hi", "usage": usage})
    result = await make_provider(fake.url).stream_chat(USER, None, None)
    assert result.usage.prompt_tokens == 10
    assert result.usage.cached_tokens == 0 and not result.usage.reports_cache


async def test_B_CACHE_5_a_cached_figure_above_the_prompt_is_capped(fake_provider, make_provider):
    fake_provider.push(
        {"content": "hi", "usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 99}}}
    )
    result = await make_provider().stream_chat(USER, None, None)
    assert result.usage.cached_tokens == 10
