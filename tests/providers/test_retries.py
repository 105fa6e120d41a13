"""Retries, backoff, timeouts, cuts and cancellation, against real sockets."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from server.providers import ProviderError, Retrying, StreamEvent, TextDelta

USER = [{"role": "user", "content": "hello"}]


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def fails(provider, events: list[StreamEvent] | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await provider.stream_chat(USER, None, None if events is None else events.append)
    return caught.value


async def test_429_honours_retry_after_then_succeeds(fake_provider, make_provider):
    fake_provider.push({"error": {"status": 429, "headers": {"Retry-After": "1"}}}, {"content": "done"})
    events: list[StreamEvent] = []
    result = await make_provider(backoff_max=20).stream_chat(USER, None, events.append)
    assert result.content == "done"
    retrying = [e for e in events if isinstance(e, Retrying)]
    assert len(retrying) == 1
    assert retrying[0].attempt == 1 and retrying[0].delay == pytest.approx(1.0)
    assert "429" in retrying[0].reason


async def test_retry_after_is_capped_at_backoff_max(fake_provider, make_provider):
    fake_provider.push({"error": {"status": 429, "headers": {"Retry-After": "30"}}})
    events: list[StreamEvent] = []
    await make_provider(backoff_max=0.05).stream_chat(USER, None, events.append)
    assert events[0] == Retrying(1, 0.05, "rate limited (HTTP 429)")


async def test_retry_after_over_a_minute_fails_at_once_naming_the_wait(fake_provider, make_provider):
    fake_provider.push({"error": {"status": 429, "headers": {"Retry-After": "120"}}})
    events: list[StreamEvent] = []
    error = await fails(make_provider(backoff_max=20), events)
    assert error.kind == "rate_limited" and error.retry_after == 120
    assert "wait 120 s" in error.message
    assert events == [] and len(fake_provider.requests) == 1


async def test_429_retries_are_exhausted_into_rate_limited(fake_provider, make_provider):
    fake_provider.push(*[{"error": {"status": 429, "headers": {"Retry-After": "0"}}}] * 3)
    error = await fails(make_provider(max_retries=2))
    assert error.kind == "rate_limited" and error.status == 429
    assert "gave up after 2 retries" in error.message
    assert len(fake_provider.requests) == 3


async def test_a_spent_quota_429_is_not_retried(fake_provider, make_provider):
    body = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    fake_provider.push({"error": {"status": 429, "body": body}})
    error = await fails(make_provider())
    assert error.kind == "rate_limited" and "exceeded your current quota" in error.message
    assert len(fake_provider.requests) == 1


async def test_500_502_503_are_retried_with_growing_backoff_then_succeed(fake_provider, make_provider):
    fake_provider.push(
        {"error": {"status": 500}}, {"error": {"status": 502}}, {"error": {"status": 503}}, {"content": "recovered"}
    )
    events: list[StreamEvent] = []
    result = await make_provider(max_retries=3, backoff_base=0.01, backoff_max=1).stream_chat(USER, None, events.append)
    assert result.content == "recovered"
    retrying = [e for e in events if isinstance(e, Retrying)]
    assert [e.attempt for e in retrying] == [1, 2, 3]
    assert [e.reason for e in retrying] == [f"server error (HTTP {s})" for s in (500, 502, 503)]
    for event in retrying:  # exponential with up to +50% jitter
        assert 0.01 * 2 ** (event.attempt - 1) <= event.delay <= 0.015 * 2 ** (event.attempt - 1)


async def test_5xx_retries_are_exhausted_into_server(fake_provider, make_provider):
    fake_provider.push(*[{"error": {"status": 503}}] * 4)
    error = await fails(make_provider(max_retries=3))
    assert error.kind == "server" and error.status == 503
    assert "overloaded" in error.message
    assert len(fake_provider.requests) == 4


async def test_a_refused_connection_is_retried_then_connection(make_provider):
    events: list[StreamEvent] = []
    error = await fails(make_provider(closed_port_url(), max_retries=2), events)
    assert error.kind == "connection"
    retrying = [e for e in events if isinstance(e, Retrying)]
    assert retrying == events and [e.reason for e in retrying] == ["connection failed"] * 2


async def test_a_server_that_hangs_is_a_read_timeout(fake_provider, make_provider):
    fake_provider.push({"hang": True})
    error = await fails(make_provider(read_timeout=0.3, max_retries=0))
    assert error.kind == "timeout"
    assert error.partial is None


async def test_a_timeout_before_any_text_is_retried(fake_provider, make_provider):
    fake_provider.push({"hang": True}, {"content": "second try"})
    events: list[StreamEvent] = []
    provider = make_provider(read_timeout=0.3, max_retries=1, own_client=True)  # timeouts set per request
    result = await provider.stream_chat(USER, None, events.append)
    assert result.content == "second try"
    assert isinstance(events[0], Retrying) and events[0].reason == "timed out"


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_a_stream_cut_after_text_is_stream_cut_with_the_partial_and_no_retry(
    fake_provider, make_provider, framing
):
    # role chunk + 2 of 6 content chunks, then half an event and the socket closes.
    fake_provider.push({"content": "abcdefghijkl", "chunks": 6, "cut_after_chunks": 3, "framing": framing})
    events: list[StreamEvent] = []
    error = await fails(make_provider(max_retries=3), events)
    assert error.kind == "stream_cut"
    assert error.partial is not None
    assert error.partial.content == "abcd"
    assert events == [TextDelta("ab"), TextDelta("cd")]
    assert len(fake_provider.requests) == 1


async def test_a_stream_cut_before_any_text_is_retried(fake_provider, make_provider):
    fake_provider.push({"content": "lost", "cut_after_chunks": 1}, {"content": "recovered"})
    events: list[StreamEvent] = []
    result = await make_provider().stream_chat(USER, None, events.append)
    assert result.content == "recovered"
    assert isinstance(events[0], Retrying) and events[0].reason == "stream cut"


async def test_cancellation_during_backoff_returns_promptly(fake_provider, make_provider):
    fake_provider.push({"error": {"status": 503, "headers": {"Retry-After": "30"}}})
    sleeping = asyncio.Event()
    task = asyncio.create_task(
        make_provider(backoff_max=20).stream_chat(
            USER, None, lambda e: sleeping.set() if isinstance(e, Retrying) else None
        )
    )
    await asyncio.wait_for(sleeping.wait(), 5)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 2)
    assert time.monotonic() - started < 1
    assert len(fake_provider.requests) == 1


async def test_cancellation_mid_stream_returns_promptly_and_closes_the_response(fake_provider, make_provider):
    fake_provider.push({"content": "one two three four", "chunks": 4, "chunk_delay": 10})
    first_text = asyncio.Event()
    provider = make_provider()
    task = asyncio.create_task(
        provider.stream_chat(USER, None, lambda e: first_text.set() if isinstance(e, TextDelta) else None)
    )
    await asyncio.wait_for(first_text.wait(), 15)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 2)
    assert time.monotonic() - started < 1
    deadline = time.monotonic() + 3
    while not fake_provider.requests[0]["client_closed"] and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert fake_provider.requests[0]["client_closed"]  # the server saw the connection close
    assert (await provider.stream_chat(USER, None, None)).content == "Echo: hello"
