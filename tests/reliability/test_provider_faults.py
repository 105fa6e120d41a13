"""Provider faults through the whole server (submitTurn): retries are bounded with backoff, a cancel during a
backoff wait ends the turn at once, no turn hangs, and a failed turn ends with an error naming the cause while
everything stored stays stored. One server and one fake for the module; each test has its own session.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from server.cli.client import Client
from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY, closing
from tests.reliability.support import assert_view_valid, start, transcript, turn, updates, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

READ_TIMEOUT = 1  # seconds (THREADLINE_READ_TIMEOUT); the hang test waits this long per attempt
NO_HANG = 45  # generous bound on any turn here


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key=API_KEY) as provider:
        yield provider


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(tmp_path_factory, fake) -> AsyncIterator[Client]:
    home = tmp_path_factory.mktemp("home")
    client = await start(home, fake.url, THREADLINE_READ_TIMEOUT=str(READ_TIMEOUT))
    yield client
    await client.close()


@pytest_asyncio.fixture(loop_scope="module")
async def sid(server, fake, tmp_path) -> str:
    fake.reset()
    return (await server.request("createSession", {"cwd": str(tmp_path)}))["sessionId"]


def chat_times(fake: FakeProvider) -> int:
    return len([r for r in fake.requests if r["path"].startswith("/v1/chat")])


async def failed_turn(server, sid, code: str, *words: str) -> dict:
    """The turn ends (no hang) with ``error.code == code``, its message naming the cause; the user message
    and the view stay sound."""
    result = await turn(server, sid, "hello", timeout=NO_HANG)
    assert result["stopReason"] == "error", result
    assert result["error"]["code"] == code, result
    for word in words:
        assert word.lower() in result["error"]["message"].lower(), result["error"]
    items = await transcript(server, sid)
    assert [i for i in items if i["role"] == "user"][-1]["content"] == "hello"
    await assert_view_valid(server, sid)
    done = updates(server, sid, "turnCompleted")
    assert done and done[-1]["stopReason"] == "error"
    return result


async def test_429_with_retry_after_is_waited_out_then_the_turn_succeeds(server, fake, sid):
    fake.push({"error": {"status": 429, "headers": {"Retry-After": "1"}}}, {"content": "after the wait"})
    started = time.monotonic()
    result = await turn(server, sid, "hello", timeout=NO_HANG)
    assert result["stopReason"] == "endTurn"
    assert time.monotonic() - started >= 1.0, "Retry-After was not honoured"
    notices = [n["message"] for n in updates(server, sid, "notice")]
    assert any("429" in n and "retrying" in n for n in notices), notices
    assert (await transcript(server, sid))[-1]["content"] == "after the wait"


async def test_5xx_are_retried_with_growing_backoff(server, fake, sid):
    fake.push(
        {"error": {"status": 500}}, {"error": {"status": 502}}, {"error": {"status": 503}}, {"content": "finally"}
    )
    result = await turn(server, sid, "hello", timeout=NO_HANG)
    assert result["stopReason"] == "endTurn"
    delays = [float(n["message"].split("retrying in ")[1].split(" s")[0]) for n in updates(server, sid, "notice")]
    assert len(delays) == 3 and delays[0] < delays[1] < delays[2], delays
    assert chat_times(fake) == 4


@pytest.mark.parametrize("status,code,word", [(503, "server", "503"), (429, "rate_limited", "429")])
async def test_persistent_errors_give_up_after_bounded_retries(server, fake, sid, status, code, word):
    fake.push(*[{"error": {"status": status, "headers": {"Retry-After": "0"}}}] * 10)
    await failed_turn(server, sid, code, word, "gave up after 3 retries")
    assert chat_times(fake) == 4, "retries must be bounded"


async def test_read_timeout_ends_the_turn_naming_the_timeout(server, fake, sid):
    fake.push(*[{"hang": True}] * 4)
    started = time.monotonic()
    await failed_turn(server, sid, "timeout", "timed out")
    assert time.monotonic() - started < NO_HANG
    assert chat_times(fake) == 4


async def test_stream_cut_mid_chunk_keeps_the_partial_text(server, fake, sid):
    fake.push({"content": "one two three four five six", "chunks": 6, "cut_after_chunks": 4})
    await failed_turn(server, sid, "stream_cut", "closed the stream")
    last = (await transcript(server, sid))[-1]
    assert last["role"] == "assistant" and last["status"] == "interrupted"
    assert "one two three four five six".startswith(last["content"]) and last["content"]


async def test_malformed_chunk_ends_the_turn_and_keeps_the_text(server, fake, sid):
    fake.push({"content": "well formed so far", "malformed_chunk": True})
    await failed_turn(server, sid, "malformed", "unparseable")
    last = (await transcript(server, sid))[-1]
    assert last["status"] == "interrupted" and last["content"] == "well formed so far"


async def test_empty_choices_end_the_turn_with_a_clear_error(server, fake, sid):
    fake.push({"empty_choices": True})
    await failed_turn(server, sid, "empty", "no choices")


async def test_refused_connection_ends_the_turn_naming_the_address(server, fake, sid, tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tmp_path / "refused-home"
    home.mkdir()
    async with closing(start(home, f"http://127.0.0.1:{port}/v1")) as client:
        other = (await client.request("createSession", {"cwd": str(tmp_path)}))["sessionId"]
        await failed_turn(client, other, "connection", "could not connect", f"127.0.0.1:{port}")


async def test_cancel_during_a_backoff_wait_ends_the_turn_at_once(server, fake, sid):
    fake.push({"error": {"status": 429, "headers": {"Retry-After": "5"}}}, {"content": "too late"})
    _, pending = server.start_request("submitTurn", {"sessionId": sid, "text": "hello"})
    await wait_for(
        lambda: any("retrying" in n["message"] for n in updates(server, sid, "notice")), what="the backoff to start"
    )
    started = time.monotonic()
    assert (await server.request("cancelTurn", {"sessionId": sid}))["cancelled"] is True
    result = await asyncio.wait_for(pending, 5)
    assert result["stopReason"] == "cancelled"
    assert time.monotonic() - started < 1.5, "the cancel waited for the backoff"
    assert chat_times(fake) == 1
    fake.reset()
    fake.push({"content": "next turn"})
    assert (await turn(server, sid, "again", timeout=NO_HANG))["stopReason"] == "endTurn"
    await assert_view_valid(server, sid)
