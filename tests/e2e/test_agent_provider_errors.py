"""Provider errors end to end: the prompt-too-long retry (R-PTL-1) and errors a person can act on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.agent_support import (
    API_KEY,
    PROVIDER,
    agent_fixture,
    as_sent,
    model_requests,
    new_fake,
    read_db,
    request_messages,
    running_agent,
)
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.openai_rules import PTL_STYLES

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()

FALLBACK_MARK = "[compressed conversation context]"


async def imported_session(agent, folder: Path) -> str:
    """Three system messages and ten exchanges, stored without a model call."""
    messages = [{"role": "system", "content": f"system rule {n}"} for n in range(3)]
    for n in range(10):
        messages += [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n}"}]
    result = await agent.client.request("importSession", {"cwd": str(folder), "messages": messages})
    return result["sessionId"]


async def test_R_PTL_1_context_too_long_then_success_retries_once_with_the_fallback_view(agent, folder):
    agent.fake.reset()
    agent.fake.ptl_style = "openai"
    agent.fake.push({"ptl": True}, {"content": "fits now"})
    sid = await imported_session(agent, folder)
    result = await agent.turn(sid, "the new question")

    assert result["stopReason"] == "endTurn", result
    first, second = agent.chat_requests()  # exactly two calls
    assert first["status"] == 400 and second["status"] == 200 and not second["rejected"]
    assert len(request_messages(first)) == 3 + 20 + 1
    view = request_messages(second)
    systems = [m for m in view if m["role"] == "system"]
    assert [m["content"] for m in systems[:2]] == ["system rule 0", "system rule 1"]
    assert len(systems) == 3 and systems[2]["content"].startswith(FALLBACK_MARK)
    conversation = [m["content"] for m in view if m["role"] != "system"]
    kept = [
        {"role": "assistant" if n % 2 == 0 else "user", "content": text}
        for n, text in enumerate(["answer 7", "question 8", "answer 8", "question 9", "answer 9"])
    ] + [{"role": "user", "content": "the new question"}]
    assert conversation == [m["content"] for m in as_sent(kept)]  # as the provider's kind sends them
    assert [u["mode"] for u in agent.updates(sid, "contextCompacted")] == ["fallback"]
    # The transcript is untouched by the retry (R-SRC-2).
    assert len(await agent.transcript(sid)) == 3 + 20 + 2


async def test_R_PTL_1_second_context_too_long_ends_the_turn_with_an_error_after_two_calls(agent, folder):
    agent.fake.reset()
    agent.fake.push({"ptl": True}, {"ptl": True}, {"content": "never asked for"})
    sid = await imported_session(agent, folder)
    result = await agent.turn(sid, "too long twice")

    assert result["stopReason"] == "error"
    assert result["error"]["code"] == "contextTooLong" and "context" in result["error"]["message"]
    assert len(agent.chat_requests()) == 2 and agent.fake.pending == 1
    assert agent.updates(sid, "turnCompleted")[-1]["stopReason"] == "error"


@pytest.mark.parametrize("style", PTL_STYLES)
async def test_R_PTL_1_each_providers_wording_triggers_the_retry(agent, folder, style):
    agent.fake.reset()
    agent.fake.ptl_style = style
    try:
        agent.fake.push({"ptl": True}, {"content": f"ok after {style}"})
        sid = await imported_session(agent, folder)
        result = await agent.turn(sid, "retry me")
    finally:
        agent.fake.ptl_style = "openai"
    assert result["stopReason"] == "endTurn", (style, result)
    assert len(agent.chat_requests()) == 2
    assert any(
        m["content"].startswith(FALLBACK_MARK)
        for m in request_messages(agent.chat_requests()[1])
        if m["role"] == "system"
    )


async def test_other_errors_do_not_retry_with_the_fallback(agent, folder):
    agent.fake.reset()
    agent.fake.push(
        {
            "error": {
                "status": 400,
                "body": {"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error"}},
            }
        }
    )
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "bad request")
    assert result["stopReason"] == "error" and result["error"]["code"] == "bad_request"
    assert len(agent.chat_requests()) == 1


async def test_unauthorized_names_the_key_problem_without_the_key(tmp_path, folder):
    home = tmp_path / "home"
    home.mkdir()
    wrong = "sk-wrong-key-DO-NOT-PRINT-77aa"
    with FakeProvider(api_key=API_KEY) as fake:
        async with running_agent(home, fake, THREADLINE_API_KEY=wrong) as a:
            sid = await a.session(folder, policy="auto")
            result = await a.turn(sid, "hello")
    assert result["stopReason"] == "error"
    message = result["error"]["message"]
    assert "API key" in message and "401" in message
    assert wrong not in message and "DO-NOT-PRINT" not in message
    assert "DO-NOT-PRINT" not in a.stderr_path.read_text()


async def test_no_provider_ends_the_turn_like_any_other_failed_turn(tmp_path, folder):
    """Clients end a turn on ``turnCompleted``; a turn refused for want of a provider must send one too."""
    home = tmp_path / "home"
    home.mkdir()
    with FakeProvider() as fake:
        async with running_agent(home, fake, THREADLINE_BASE_URL="", THREADLINE_MODEL="") as a:
            sid = await a.session(folder, policy="auto")
            result = await a.turn(sid, "hello")
    assert result["stopReason"] == "error" and result["error"]["code"] == "noProvider"
    completed = [
        (p["turnId"], p["update"])
        for m, p in a.client.notifications
        if m == "sessionUpdate" and p["update"]["kind"] == "turnCompleted"
    ]
    assert [(t, u["stopReason"], u["error"]["code"]) for t, u in completed] == [
        (result["turnId"], "error", "noProvider")
    ]
    assert fake.requests == []


async def test_a_message_larger_than_the_window_is_shortened_in_the_request_not_in_the_transcript(tmp_path, folder):
    """Beyond R-FALL-1: six verbatim messages cannot fit when one of them is larger than the whole window, and
    the R-PTL-1 retry would fail the same way. The request carries a head and tail of it instead, the provider
    (which enforces its window) accepts it first time, and the transcript keeps every character (R-SRC-2)."""
    pasted = "here is the whole build log:\n" + "".join(f"step {i}: compiling module {i} ... ok\n" for i in range(5000))
    with FakeProvider(api_key=API_KEY, context_window=8000) as fake:
        async with running_agent(tmp_path / "home", fake, THREADLINE_CONTEXT_WINDOW="8000") as small:
            sid = await small.session(folder)
            result = await small.turn(sid, pasted)
            notices = [u["message"] for u in small.updates(sid, "notice")]
            stored = [i["content"] for i in await small.transcript(sid) if i["role"] == "user"]
    assert result["stopReason"] == "endTurn", result
    (request,) = small.chat_requests()
    assert request["status"] == 200 and not request["rejected"]
    sent = request_messages(request)[-1]["content"]
    assert "characters of this message omitted to fit the context window" in sent
    assert sent.startswith("here is the whole build log:") and "step 4999" in sent
    assert any("shortened in this request" in n for n in notices), notices
    assert stored == [pasted]


def _dense(n: int, chars: int) -> str:
    """Text a provider's tokenizer counts at about twice our estimate: every fifth character a control character
    (JSON escapes it as six), as a binary-ish log does to a real tokenizer."""
    prose = f"line {n}: the build log says the quick brown fox jumps over the lazy dog. "
    return "".join(prose[i % len(prose)] if i % 5 else "\x01" for i in range(chars))


async def test_B_TOK_3_a_refusal_that_says_the_count_teaches_the_calibration_so_the_next_turn_fits(tmp_path, folder):
    """A history our estimate puts under the threshold but the provider counts over its window: the first call is
    refused (R-PTL-1, the fallback retry answers). Its answer says how many tokens it counted; that teaches the
    calibration at once (a moving average over the small retry's usage would not), so the next turn's request is
    planned with the provider's count and compacts instead of being refused again. The Responses API's refusal
    gives no count: there the next turn is refused once more and retried, as before."""
    # A window large enough that the history sits well inside our threshold (about 12.5k of 14.3k estimated, the
    # tool definitions reserved) while the double counts it near 21k, over 20k: a few more tools or a longer
    # prompt do not move either side across its line.
    history = [{"role": "system", "content": "rules"}]
    for n in range(16):
        history += [{"role": "user", "content": _dense(n, 2_650)}, {"role": "assistant", "content": f"noted {n}"}]
    with new_fake(api_key=API_KEY, context_window=20_000) as fake:
        fake.push({"content": "answered from the fallback"}, {"content": "answered"}, {"content": "answered again"})
        async with running_agent(tmp_path / "home", fake, THREADLINE_CONTEXT_WINDOW="20000") as agent:
            imported = await agent.client.request("importSession", {"cwd": str(folder), "messages": history})
            sid = imported["sessionId"]
            planned = await agent.client.request("getContextView", {"sessionId": sid})
            assert planned["mode"] == "full", planned  # our estimate: it fits
            first = await agent.turn(sid, "go on", timeout=120)
            after_first = len(model_requests(fake))
            # What the first turn taught, before the second turn's own usage moves the average again
            (factor,) = read_db(tmp_path / "home", "SELECT factor FROM calibrations")[0]
            second = await agent.turn(sid, "and now?", timeout=120)
            requests = model_requests(fake)
    assert first["stopReason"] == "endTurn" and second["stopReason"] == "endTurn", (first, second)
    refused, retried = requests[:after_first]
    assert refused["status"] == 400 and retried["status"] == 200  # the provider counted it over its window
    turn_two = requests[after_first:]
    if PROVIDER == "openai-responses":
        assert [r["status"] for r in turn_two] == [400, 200]
        return
    (only,) = turn_two  # planned with the provider's count: accepted first time
    assert only["status"] == 200 and not only.get("rejected")
    assert any(FALLBACK_MARK in str(m.get("content")) for m in request_messages(only))  # it compacted
    # Learned from the refusal: the double counts the messages only while our estimate also holds the tool
    # definitions, so the retry alone would teach under 1; how far over 1 depends on how many tools there are
    assert factor > 1.0
