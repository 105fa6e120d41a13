"""R-PTL-1: every provider's context-too-long answer is recognised, and the provider never retries it."""

from __future__ import annotations

import pytest

from server.providers import ProviderError, Retrying, StreamEvent, is_context_too_long
from server.providers.errors import refused_prompt_tokens, stated_context_window
from tests.fakes.openai_rules import PTL_STYLES

LONG = [{"role": "user", "content": "x" * 2_000}]

# Real answers, as each server words them.
WORDINGS = {
    "openai": '{"error": {"message": "This model\'s maximum context length is 128000 tokens. However, your '
    'messages resulted in 130514 tokens. Please reduce the length of the messages.", "type": '
    '"invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
    "openai_code_only": '{"error": {"message": "Input is too large.", "code": "context_length_exceeded"}}',
    "deepseek": '{"error": {"message": "This model\'s maximum context length is 65536 tokens. However, you '
    "requested 70001 tokens (70001 in the messages, 0 in the completion). Please reduce the length "
    'of the messages or completion.", "type": "invalid_request_error", "param": null, "code": '
    '"invalid_request_error"}}',
    "qwen": '{"error": {"code": "invalid_parameter_error", "param": null, "message": "<400> '
    'InternalError.Algo.InvalidParameter: Range of input length should be [1, 129024]", "type": '
    '"invalid_request_error"}}',
    "dashscope": "InternalError.Algo.InvalidParameter: The input length exceeds the model limit",
    "moonshot": '{"error": {"message": "Invalid request: Your request exceeded model token limit: 8192", '
    '"type": "invalid_request_error"}}',
    "openrouter": '{"error": {"message": "This endpoint\'s maximum context length is 163840 tokens. However, you '
    'requested about 201234 tokens (201234 of text input).", "code": 400}}',
    "ollama": '{"error": {"message": "prompt too long; exceeded max context length by 120 tokens"}}',
    "ollama_input": "input length exceeds maximum context length",
    "vllm": '{"object": "error", "message": "This model\'s maximum context length is 4096 tokens. However, you '
    'requested 5000 tokens (4900 in the messages, 100 in the completion).", "code": 400}',
    "vllm_new": '{"error": {"message": "The prompt (total length 10250) is longer than the maximum model length '
    'of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens."}}',
    "vllm_input_prompt": "Input prompt (5000 tokens) is too long and exceeds limit of 4096",
    "llamacpp_old": '{"error": {"code": 400, "message": "the request exceeds the available context size, try '
    'increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}',
    "llamacpp": '{"error": {"code": 400, "message": "request (5000 tokens) exceeds the available context size '
    '(4096 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000, '
    '"n_ctx": 4096}}',
    "vllm_v1": '{"error": {"message": "This model\'s maximum context length is 4096 tokens. However, your request '
    'has 5000 input tokens. Please reduce the length of the input messages. None", "type": "BadRequestError", '
    '"param": null, "code": 400}}',
    "anthropic": '{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: '
    '210000 tokens > 200000 maximum"}}',
    "generic_too_many_tokens": "Request has too many tokens for this model",
    "generic_context_length": "Input exceeds the context length",
}
NOT_CONTEXT = {
    (401, "Incorrect API key provided: sk-****abcd."),
    (404, "The model `gpt-5x` does not exist or you do not have access to it."),
    (429, "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, too many tokens requested."),
    (400, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."),
    (400, "max_tokens is too large: 50000. This model supports at most 16384 completion tokens."),
    (500, "The server had an error while processing your request. Sorry about that!"),
    (200, "maximum context length"),
}


@pytest.mark.parametrize("name", sorted(WORDINGS))
def test_R_PTL_1_recognises_each_provider_wording(name):
    assert is_context_too_long(400, WORDINGS[name])
    assert is_context_too_long(None, WORDINGS[name])  # the same text inside a stream


# The provider's count of the refused prompt, where its wording gives one (B-TOK-3 learns from it).
COUNTED = {
    "openai": 130514,
    "deepseek": 70001,
    "openrouter": 201234,
    "vllm": 4900,
    "vllm_input_prompt": 5000,
    "llamacpp": 5000,
    "llamacpp_old": 5000,
    "vllm_v1": 5000,
    "anthropic": 210000,
}
# The window the answer says the server has (a window configured larger than the server's recovers).
STATED = {
    "openai": 128000,
    "deepseek": 65536,
    "qwen": 129024,
    "moonshot": 8192,
    "openrouter": 163840,
    "vllm": 4096,
    "vllm_v1": 4096,
    "llamacpp": 4096,
    "llamacpp_old": 4096,
    "anthropic": 200000,
}


@pytest.mark.parametrize("name", sorted(WORDINGS))
def test_issue_28_the_window_a_context_too_long_answer_states_is_read(name):
    assert stated_context_window(WORDINGS[name]) == STATED.get(name)


@pytest.mark.parametrize("name", sorted(WORDINGS))
def test_B_TOK_3_the_count_a_context_too_long_answer_gives_is_read_and_no_other_number(name):
    assert refused_prompt_tokens(WORDINGS[name]) == COUNTED.get(name)


def test_B_TOK_3_a_huge_or_hostile_body_gives_no_count_and_returns_at_once():
    assert refused_prompt_tokens("x" * 5_000_000 + "your messages resulted in 9 tokens") is None  # past the prefix
    assert refused_prompt_tokens("your messages resulted in " + "9" * 50 + " tokens") is None
    assert refused_prompt_tokens("prompt is too long: 0 tokens > 10 maximum") is None


@pytest.mark.parametrize(("status", "body"), sorted(NOT_CONTEXT))
def test_R_PTL_1_other_errors_are_not_context_too_long(status, body):
    assert not is_context_too_long(status, body)


@pytest.mark.parametrize("style", PTL_STYLES)
async def test_R_PTL_1_each_style_over_http_is_context_too_long_and_not_retried(
    fake_provider_factory, make_provider, style
):
    fake = fake_provider_factory(context_window=100, ptl_style=style)
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        await make_provider(fake.url, max_retries=3).stream_chat(LONG, None, events.append)
    assert caught.value.kind == "context_too_long"
    assert caught.value.status == 400
    counted = fake.requests[0].get("prompt_tokens")
    if style in ("openai", "deepseek", "openrouter", "vllm", "vllm-v1", "llamacpp"):
        assert caught.value.prompt_tokens is not None and caught.value.prompt_tokens > 100
    else:  # Qwen, Moonshot and Ollama say the limit or the excess, not the count
        assert caught.value.prompt_tokens is None, counted
    assert len(fake.requests) == 1
    assert not any(isinstance(e, Retrying) for e in events)
    assert caught.value.context_window == (None if style == "ollama" else 100)  # Ollama says only the excess


async def test_R_PTL_1_openai_wording_is_context_too_long(fake_provider, make_provider):
    fake_provider.push({"ptl": True})
    with pytest.raises(ProviderError) as caught:
        await make_provider().stream_chat(LONG, None, None)
    assert caught.value.kind == "context_too_long"
    assert "maximum context length" in caught.value.message
    assert len(fake_provider.requests) == 1
