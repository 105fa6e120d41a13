"""The model-service double rejects what the real API rejects and streams real SSE."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.fakes.fake_provider import FakeProvider

USER: dict[str, Any] = {"role": "user", "content": "read a.txt"}
CALL = {"id": "call_x", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
ASSISTANT_CALLS: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [CALL]}
RESULT: dict[str, Any] = {"role": "tool", "tool_call_id": "call_x", "content": "hello"}
FAKE_SCRIPT = Path(__file__).with_name("fake_provider.py")


# One client for the module: building an httpx client (its TLS context) costs more than a request here.
CLIENT = httpx.Client(timeout=5)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    CLIENT.close()


def post(fake: FakeProvider, body: Any, **headers: str) -> httpx.Response:
    return CLIENT.post(f"{fake.url}/chat/completions", json=body, headers=headers)


def chat(messages: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "messages": messages, **extra}


def assert_rejected(response: httpx.Response, status: int, message: str, param: Any = ...) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert message in error["message"]
    assert error["type"] == "invalid_request_error"
    if param is not ...:
        assert error["param"] == param
    return error


def stream(fake: FakeProvider, body: dict[str, Any]) -> list[str]:
    """The `data:` payloads of one streamed answer, parsed by httpx-sse."""
    with connect_sse(CLIENT, "POST", f"{fake.url}/chat/completions", json=body) as source:
        assert source.response.status_code == 200
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [sse.data for sse in source.iter_sse()]


def chunks(datas: list[str]) -> list[dict[str, Any]]:
    assert datas[-1] == "[DONE]"
    return [json.loads(data) for data in datas[:-1]]


# -- streaming -------------------------------------------------------------------------------------------


def test_streams_text_as_chunked_sse_ending_with_done(fake_provider):
    fake_provider.push({"content": "Hello world", "chunks": 3})
    with (
        httpx.Client(timeout=5) as client,
        connect_sse(client, "POST", f"{fake_provider.url}/chat/completions", json=chat([USER], stream=True)) as source,
    ):
        assert source.response.headers["transfer-encoding"] == "chunked"
        datas = [sse.data for sse in source.iter_sse()]
    parsed = chunks(datas)
    assert all(c["object"] == "chat.completion.chunk" for c in parsed)
    assert parsed[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in parsed)
    assert text == "Hello world"
    assert len([c for c in parsed if c["choices"][0]["delta"].get("content")]) == 3
    assert parsed[-1]["choices"][0]["finish_reason"] == "stop"


def test_streams_usage_in_a_final_chunk_with_empty_choices_only_when_asked(fake_provider):
    fake_provider.push({"content": "Hi"}, {"content": "Hi"})
    with_usage = chunks(stream(fake_provider, chat([USER], stream=True, stream_options={"include_usage": True})))
    assert with_usage[-1]["choices"] == []
    usage = with_usage[-1]["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] == 1
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    without = chunks(stream(fake_provider, chat([USER], stream=True)))
    assert all("usage" not in c for c in without)


def test_close_framing_ends_the_body_by_closing_the_socket(fake_provider):
    fake_provider.push({"content": "Hello", "framing": "close"})
    with (
        httpx.Client(timeout=5) as client,
        connect_sse(client, "POST", f"{fake_provider.url}/chat/completions", json=chat([USER], stream=True)) as source,
    ):
        assert "transfer-encoding" not in source.response.headers
        assert source.response.headers["connection"] == "close"
        datas = [sse.data for sse in source.iter_sse()]
    assert datas[-1] == "[DONE]"


def test_streams_reasoning_before_content_in_the_chosen_field(fake_provider):
    fake_provider.push(
        {"reasoning": "think", "content": "answer"},
        {"reasoning": "think", "content": "answer", "reasoning_field": "reasoning"},
    )
    first = chunks(stream(fake_provider, chat([USER], stream=True)))
    deltas = [c["choices"][0]["delta"] for c in first]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "think"
    assert [i for i, d in enumerate(deltas) if "reasoning_content" in d][-1] < next(
        i for i, d in enumerate(deltas) if d.get("content")
    )
    second = chunks(stream(fake_provider, chat([USER], stream=True)))
    assert "".join(c["choices"][0]["delta"].get("reasoning", "") for c in second) == "think"


def test_streams_tool_call_arguments_in_fragments_by_index_like_openai(fake_provider):
    fake_provider.push(
        {
            "tool_calls": [
                {"id": "call_1", "name": "read_file", "arguments": {"path": "a.txt"}},
                {"id": "call_2", "name": "list_files", "arguments": {}},
            ]
        }
    )
    parsed = chunks(stream(fake_provider, chat([USER], stream=True)))
    fragments = [f for c in parsed for f in c["choices"][0]["delta"].get("tool_calls", [])]
    first = [f for f in fragments if f["index"] == 0]
    assert first[0]["id"] == "call_1" and first[0]["function"] == {"name": "read_file", "arguments": ""}
    assert all("id" not in f for f in first[1:])
    assert len(first) > 2
    assert json.loads("".join(f["function"]["arguments"] for f in first)) == {"path": "a.txt"}
    assert parsed[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_echoes_the_last_user_message_when_the_script_is_empty(fake_provider):
    parsed = chunks(stream(fake_provider, chat([{"role": "system", "content": "s"}, USER], stream=True)))
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in parsed) == "Echo: read a.txt"


def test_no_stream_item_answers_one_plain_json_completion(fake_provider):
    fake_provider.push({"content": "plain", "no_stream": True})
    response = post(fake_provider, chat([USER], stream=True))
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == "plain"


def test_scripted_error_sends_its_status_body_and_headers(fake_provider):
    fake_provider.push({"error": {"status": 429, "headers": {"Retry-After": "1"}}})
    response = post(fake_provider, chat([USER], stream=True))
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_cut_after_chunks_closes_the_socket_mid_event_without_done(fake_provider):
    fake_provider.push({"content": "abcdef", "chunks": 6, "cut_after_chunks": 3})
    received: list[str] = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.Client(timeout=5) as client,
        connect_sse(client, "POST", f"{fake_provider.url}/chat/completions", json=chat([USER], stream=True)) as source,
    ):
        received.extend(sse.data for sse in source.iter_sse())
    assert len(received) == 3 and "[DONE]" not in received
    assert fake_provider.requests[-1]["cut"] is True


def test_malformed_chunk_sends_an_unparseable_data_line(fake_provider):
    fake_provider.push({"content": "Hi", "malformed_chunk": True})
    datas = stream(fake_provider, chat([USER], stream=True))
    with pytest.raises(ValueError):
        for data in datas[:-1]:
            json.loads(data)


def test_hang_sends_headers_then_nothing_and_notices_the_client_leave(fake_provider):
    fake_provider.push({"hang": True})
    url = f"{fake_provider.url}/chat/completions"
    with (
        httpx.Client(timeout=httpx.Timeout(5, read=0.3)) as client,
        pytest.raises(httpx.ReadTimeout),
        client.stream("POST", url, json=chat([USER], stream=True)) as response,
    ):
        assert response.status_code == 200
        response.read()
    deadline = time.monotonic() + 3
    while not fake_provider.requests[-1]["client_closed"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake_provider.requests[-1]["client_closed"]


def test_refuses_unknown_script_keys():
    with pytest.raises(ValueError, match="unknown script keys"):
        FakeProvider().push({"contnet": "typo"})


# -- request validation (the real API's rules and wordings) ------------------------------------------------


def test_rejects_a_tool_message_with_no_preceding_tool_calls(fake_provider):
    response = post(fake_provider, chat([USER, RESULT]))
    assert_rejected(
        response,
        400,
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        param="messages.[1].role",
    )


def test_rejects_a_tool_message_separated_from_its_call_by_another_message(fake_provider):
    response = post(fake_provider, chat([USER, ASSISTANT_CALLS, RESULT, USER, RESULT]))
    assert_rejected(
        response, 400, "must be a response to a preceeding message with 'tool_calls'", param="messages.[4].role"
    )


def test_rejects_a_tool_result_whose_id_is_not_among_the_calls(fake_provider):
    stray = {"role": "tool", "tool_call_id": "call_other", "content": "x"}
    response = post(fake_provider, chat([USER, ASSISTANT_CALLS, RESULT, stray]))
    assert_rejected(
        response,
        400,
        "'tool_call_id' of 'call_other' not found in 'tool_calls' of previous message",
        param="messages.[3].tool_call_id",
    )


def test_rejects_tool_calls_not_followed_by_a_response_for_each_id(fake_provider):
    second = {**CALL, "id": "call_y"}
    assistant = {"role": "assistant", "content": None, "tool_calls": [CALL, second]}
    response = post(fake_provider, chat([USER, assistant, RESULT, {"role": "user", "content": "go on"}]))
    assert_rejected(
        response,
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        "response messages: call_y",
        param="messages.[1].role",
    )


def test_rejects_tool_calls_left_unanswered_at_the_end(fake_provider):
    response = post(fake_provider, chat([USER, ASSISTANT_CALLS]))
    assert_rejected(response, 400, "did not have response messages: call_x", param="messages.[1].role")


def test_accepts_parallel_tool_results_in_any_order(fake_provider):
    second = {**CALL, "id": "call_y"}
    assistant = {"role": "assistant", "content": "", "tool_calls": [CALL, second]}
    results = [{"role": "tool", "tool_call_id": "call_y", "content": "2"}, RESULT]
    assert post(fake_provider, chat([USER, assistant, *results])).status_code == 200


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_rejects_reasoning_fields_sent_back_in_input(fake_provider, field):
    assistant = {"role": "assistant", "content": "hi", field: "thoughts"}
    response = post(fake_provider, chat([USER, assistant, USER]))
    assert_rejected(response, 400, f"('{field}' was unexpected)")


def test_rejects_an_unknown_role(fake_provider):
    response = post(fake_provider, chat([{"role": "robot", "content": "x"}]))
    error = assert_rejected(response, 400, "Invalid value: 'robot'. Supported values are:", param="messages.[0].role")
    assert error["code"] == "invalid_value"


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user"},
        {"role": "system", "content": None},
        {"role": "tool", "tool_call_id": "call_x"},
    ],
)
def test_rejects_a_missing_required_content(fake_provider, message):
    messages = [USER, ASSISTANT_CALLS, message] if message["role"] == "tool" else [message]
    response = post(fake_provider, chat(messages))
    error = assert_rejected(response, 400, f"Missing required parameter: 'messages[{len(messages) - 1}].content'.")
    assert error["code"] == "missing_required_parameter"


def test_rejects_an_assistant_message_with_neither_content_nor_tool_calls(fake_provider):
    response = post(fake_provider, chat([USER, {"role": "assistant", "content": None}, USER]))
    assert_rejected(
        response, 400, "Invalid value for 'content': expected a string, got null.", param="messages.[1].content"
    )


def test_rejects_tool_call_arguments_that_are_not_a_string(fake_provider):
    call = {**CALL, "function": {"name": "read_file", "arguments": {"path": "a.txt"}}}
    response = post(fake_provider, chat([USER, {"role": "assistant", "content": None, "tool_calls": [call]}, RESULT]))
    error = assert_rejected(
        response,
        400,
        "Invalid type for 'messages[1].tool_calls[0].function.arguments': "
        "expected a string, but got an object instead.",
    )
    assert error["code"] == "invalid_type"


def test_rejects_a_missing_model(fake_provider):
    response = post(fake_provider, {"messages": [USER]})
    assert_rejected(response, 400, "you must provide a model parameter")


@pytest.mark.parametrize(
    ("messages", "message", "code"),
    [
        (None, "Missing required parameter: 'messages'.", "missing_required_parameter"),
        (
            "hello",
            "Invalid type for 'messages': expected an array of objects, but got a string instead.",
            "invalid_type",
        ),
        ([], "Invalid 'messages': empty array.", "empty_array"),
    ],
)
def test_rejects_messages_that_are_missing_not_a_list_or_empty(fake_provider, messages, message, code):
    body = {"model": "fake-model"} if messages is None else chat(messages)
    assert assert_rejected(post(fake_provider, body), 400, message)["code"] == code


def test_rejects_a_body_that_is_not_json(fake_provider):
    response = CLIENT.post(f"{fake_provider.url}/chat/completions", content=b"{not json")
    assert_rejected(response, 400, "We could not parse the JSON body of your request.")


def test_rejects_an_empty_tools_list_and_tool_choice_without_tools(fake_provider):
    assert_rejected(post(fake_provider, chat([USER], tools=[])), 400, "Invalid 'tools': empty array.")
    assert_rejected(
        post(fake_provider, chat([USER], tool_choice="auto")),
        400,
        "'tool_choice' is only allowed when 'tools' are specified.",
        param="tool_choice",
    )


def test_rejects_stream_options_without_stream(fake_provider):
    response = post(fake_provider, chat([USER], stream_options={"include_usage": True}))
    assert_rejected(response, 400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.")


def test_can_reject_stream_options_like_an_old_local_server(fake_provider_factory):
    fake = fake_provider_factory(reject_stream_options=True)
    response = post(fake, chat([USER], stream=True, stream_options={"include_usage": True}))
    assert_rejected(response, 400, 'unknown field "stream_options"')
    assert post(fake, chat([USER], stream=True)).status_code == 200


def test_rejects_a_wrong_or_missing_api_key_with_401(fake_provider_factory):
    fake = fake_provider_factory(api_key="sk-right-key-0000")
    wrong = post(fake, chat([USER]), Authorization="Bearer sk-wrong-key-1234")
    error = wrong.json()["error"]
    assert wrong.status_code == 401 and error["code"] == "invalid_api_key"
    assert error["message"].startswith("Incorrect API key provided: sk-")
    assert "sk-wrong-key-1234" not in error["message"]  # masked, as OpenAI does
    assert post(fake, chat([USER])).status_code == 401
    assert post(fake, chat([USER]), Authorization="Bearer sk-right-key-0000").status_code == 200


def test_records_requests_with_the_authorization_value_redacted(fake_provider_factory):
    fake = fake_provider_factory(api_key="sk-right-key-0000")
    post(fake, chat([USER]), Authorization="Bearer sk-right-key-0000")
    post(fake, chat([USER, RESULT]), Authorization="Bearer sk-right-key-0000")
    first, second = fake.requests
    assert first["headers"]["authorization"] == "<redacted>"
    assert "sk-right-key-0000" not in json.dumps(fake.requests)
    assert first["body"]["messages"] == [USER] and first["rejected"] is False
    assert second["rejected"] is True and second["status"] == 400


def test_answers_404_for_a_model_outside_the_allow_list(fake_provider_factory):
    fake = fake_provider_factory(models=["gpt-4o"])
    error = assert_rejected(
        post(fake, chat([USER])), 404, "The model `fake-model` does not exist or you do not have access to it."
    )
    assert error["code"] == "model_not_found"
    assert post(fake, {**chat([USER]), "model": "gpt-4o"}).status_code == 200


def test_rejected_requests_do_not_consume_the_script(fake_provider):
    fake_provider.push({"content": "scripted"})
    post(fake_provider, chat([USER, RESULT]))
    parsed = chunks(stream(fake_provider, chat([USER], stream=True)))
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in parsed) == "scripted"


PTL_WORDINGS = {
    "openai": "This model's maximum context length is 100 tokens.",
    "deepseek": "This model's maximum context length is 100 tokens. However, you requested",
    "qwen": "Range of input length should be [1, 100]",
    "moonshot": "Your request exceeded model token limit: 100",
    "openrouter": "This endpoint's maximum context length is 100 tokens.",
    "vllm": "This model's maximum context length is 100 tokens.",
    "vllm-v1": "This model's maximum context length is 100 tokens. However, your request has",
    "llamacpp": "exceeds the available context size (100 tokens), try increasing it",
    "ollama": "prompt too long; exceeded max context length by",
}


@pytest.mark.parametrize("style", sorted(PTL_WORDINGS))
def test_R_PTL_1_over_the_window_answers_400_in_the_provider_wording(fake_provider_factory, style):
    fake = fake_provider_factory(context_window=100, ptl_style=style)
    assert post(fake, chat([USER])).status_code == 200
    response = post(fake, chat([{"role": "user", "content": "x" * 1000}]))
    assert response.status_code == 400
    assert PTL_WORDINGS[style] in response.text
    assert fake.requests[-1]["rejected"] is True


def test_R_PTL_1_ptl_item_answers_context_too_long_once(fake_provider):
    fake_provider.push({"ptl": True})
    first = post(fake_provider, chat([USER]))
    assert first.status_code == 400 and first.json()["error"]["code"] == "context_length_exceeded"
    assert post(fake_provider, chat([USER])).status_code == 200


# -- the standalone process ------------------------------------------------------------------------------


def test_runs_standalone_with_only_the_stdlib_and_serves_control_endpoints(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "from the script file"}]))
    # -I -S: isolated mode without site-packages, so any non-stdlib import would fail.
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", str(FAKE_SCRIPT), "--port", "0", "--api-key", "k", "--script", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        first = process.stdout.readline().strip()
        assert first.startswith("FAKE_PROVIDER_URL=http://127.0.0.1:"), process.stderr.read()
        url = first.split("=", 1)[1]
        root = url.removesuffix("/v1")
        with httpx.Client(timeout=5, headers={"Authorization": "Bearer k"}) as client:
            body = chat([USER])
            answer = client.post(f"{url}/chat/completions", json=body).json()
            assert answer["choices"][0]["message"]["content"] == "from the script file"
            assert client.post(f"{root}/_control/push", json=[{"content": "pushed"}]).json() == {"queued": 1}
            answer = client.post(f"{url}/chat/completions", json=body).json()
            assert answer["choices"][0]["message"]["content"] == "pushed"
            recorded = client.get(f"{root}/_control/requests").json()
            assert len(recorded) == 2 and recorded[0]["headers"]["authorization"] == "<redacted>"
            assert client.post(f"{root}/_control/push", json=[{"bogus": 1}]).status_code == 400
            client.post(f"{root}/_control/reset")
            assert client.get(f"{root}/_control/requests").json() == []
    finally:
        process.terminate()
        process.wait(timeout=5)
        process.stdout.close()
        process.stderr.close()


# --- prompt cache (B-CACHE-5) ---------------------------------------------------------------------------


def usage_of(fake: FakeProvider, messages: list[dict[str, Any]]) -> dict[str, Any]:
    response = post(fake, chat(messages))  # a plain completion carries the same usage as the stream's last chunk
    assert response.status_code == 200, response.text
    return response.json()["usage"]


def tokens(messages: list[dict[str, Any]]) -> int:
    from tests.fakes.openai_rules import estimate_prompt_tokens

    return estimate_prompt_tokens(messages)


def test_B_CACHE_5_fake_reports_the_prefix_shared_with_an_earlier_request_as_cached(fake_provider):
    first = [{"role": "system", "content": "be brief"}, USER]
    assert usage_of(fake_provider, first)["prompt_tokens_details"]["cached_tokens"] == 0
    extended = [*first, ASSISTANT_CALLS, RESULT]
    usage = usage_of(fake_provider, extended)
    assert usage["prompt_tokens_details"]["cached_tokens"] == tokens(first) > 0
    assert usage["prompt_tokens"] == tokens(extended) > tokens(first)
    changed_start = [{"role": "system", "content": "be verbose"}, USER]
    assert usage_of(fake_provider, changed_start)["prompt_tokens_details"]["cached_tokens"] == 0
    # an edit in the middle keeps the messages before it cached
    edited = [*first, {**ASSISTANT_CALLS, "content": "let me look"}, RESULT]
    assert usage_of(fake_provider, edited)["prompt_tokens_details"]["cached_tokens"] == tokens(first)
    assert fake_provider.requests[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == tokens(first)
    fake_provider.reset()
    assert usage_of(fake_provider, extended)["prompt_tokens_details"]["cached_tokens"] == 0


def test_B_CACHE_5_fake_cache_styles_and_a_configured_figure(fake_provider_factory):
    messages = [USER, ASSISTANT_CALLS, RESULT]
    deepseek = fake_provider_factory(cache_style="deepseek")
    usage_of(deepseek, messages[:1])
    usage = usage_of(deepseek, messages)
    assert "prompt_tokens_details" not in usage
    assert usage["prompt_cache_hit_tokens"] == tokens(messages[:1])
    assert usage["prompt_cache_hit_tokens"] + usage["prompt_cache_miss_tokens"] == usage["prompt_tokens"]
    silent = fake_provider_factory(cache_style="none")
    usage_of(silent, messages)
    assert not {"prompt_tokens_details", "prompt_cache_hit_tokens"} & set(usage_of(silent, messages))
    fixed = fake_provider_factory(cached_tokens=7)
    assert usage_of(fixed, messages)["prompt_tokens_details"]["cached_tokens"] == 7
    with pytest.raises(ValueError):
        FakeProvider(cache_style="anthropic")
