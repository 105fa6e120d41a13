"""HTTP error answers become ProviderErrors of the right kind, with a plain message and never the key."""

from __future__ import annotations

import pytest

from server.providers import ProviderError
from server.providers.errors import error_for_status
from tests.fakes.openai_rules import masked_key

USER = [{"role": "user", "content": "hello"}]
SERVER_KEY = "sk-proj-right-key-7f3a9c2e"
WRONG_KEY = "sk-proj-wrong-key-5d8b1e4f"


async def fails(provider, messages=USER) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await provider.stream_chat(messages, None, None)
    return caught.value


async def test_401_says_the_key_was_rejected_without_showing_it(fake_provider_factory, make_provider):
    fake = fake_provider_factory(api_key=SERVER_KEY)
    error = await fails(make_provider(fake.url, api_key=WRONG_KEY))
    assert error.kind == "auth" and error.status == 401
    assert "API key was rejected" in error.message
    for secret in (WRONG_KEY, masked_key(WRONG_KEY), SERVER_KEY, WRONG_KEY[-8:]):
        assert secret not in str(error) and secret not in repr(error)
    assert len(fake.requests) == 1  # not retried


async def test_401_without_a_configured_key_says_none_is_configured(fake_provider_factory, make_provider):
    fake = fake_provider_factory(api_key=SERVER_KEY)
    error = await fails(make_provider(fake.url, api_key=None))
    assert error.kind == "auth"
    assert "none is configured" in error.message


async def test_403_says_the_key_lacks_access_to_the_model(fake_provider, make_provider):
    fake_provider.push({"error": {"status": 403}})
    error = await fails(make_provider(api_key=WRONG_KEY))
    assert error.kind == "auth" and error.status == 403
    assert "lacks access to model 'fake-model'" in error.message
    assert WRONG_KEY not in str(error)


async def test_404_names_the_missing_model_and_is_not_retried(fake_provider_factory, make_provider):
    fake = fake_provider_factory(models=["gpt-4o"])
    error = await fails(make_provider(fake.url, model="gpt-40"))
    assert error.kind == "model_not_found" and error.status == 404
    assert "Model 'gpt-40' was not found" in error.message
    assert len(fake.requests) == 1


async def test_other_4xx_is_bad_request_carrying_the_provider_message(fake_provider, make_provider):
    # The double, like DeepSeek, refuses reasoning sent back in the input.
    messages = [*USER, {"role": "assistant", "content": "hi", "reasoning_content": "..."}, *USER]
    error = await fails(make_provider(), messages)
    assert error.kind == "bad_request" and error.status == 400
    assert "('reasoning_content' was unexpected)" in error.message
    assert len(fake_provider.requests) == 1


async def test_an_error_inside_the_stream_after_text_keeps_the_partial(fake_provider, make_provider):
    fake_provider.push({"content": "Partial answer", "error": {"status": 502, "in_stream": True}})
    error = await fails(make_provider())
    assert error.kind == "server" and error.status == 502
    assert error.partial is not None
    assert error.partial.content == "Partial answer"
    assert len(fake_provider.requests) == 1  # text was shown, so no retry


async def test_R_PTL_1_context_error_inside_the_stream_is_context_too_long(fake_provider, make_provider):
    body = {"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum", "type": "error"}}
    fake_provider.push({"error": {"in_stream": True, "body": body}})
    error = await fails(make_provider())
    assert error.kind == "context_too_long"
    assert len(fake_provider.requests) == 1


def test_a_redirect_is_reported_not_followed():
    error = error_for_status(307, "", model="m", base_url="http://example.test/v1", api_key="k")
    assert error.kind == "bad_request" and "redirected the request (HTTP 307)" in error.message
