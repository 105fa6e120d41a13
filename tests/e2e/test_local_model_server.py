""" "A real local model server": what a llama.cpp / vLLM / Ollama user needs, against a real server process
and the Chat Completions double answering as those servers do (their exact error bodies: tests/fakes/openai_rules).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from server.providers.openai_compat import OpenAICompatibleProvider
from tests.e2e.agent_support import API_KEY, model_requests, running_agent
from tests.fakes.fake_provider import FakeProvider

pytestmark = pytest.mark.asyncio

SERVER_WINDOW = 3000  # what the local server was started with (llama-server -c 3000)
CONFIGURED = 32000  # what the user configured, wrongly


async def test_issue_28_max_output_tokens_is_sent_as_max_tokens_for_the_openai_kind(tmp_path: Path, folder):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[provider]\nmax_output_tokens = 321\n")
    with FakeProvider(api_key=API_KEY) as fake:
        fake.push({"content": "bounded"})
        async with running_agent(home, fake) as agent:
            sid = await agent.session(folder, policy="auto")
            assert (await agent.turn(sid, "hi"))["stopReason"] == "endTurn"
    [request] = model_requests(fake)
    assert request["body"]["max_tokens"] == 321 and "max_completion_tokens" not in request["body"]


async def test_issue_28_openais_own_endpoint_gets_max_completion_tokens():
    """OpenAI's reasoning models refuse ``max_tokens``; its own API takes ``max_completion_tokens``."""
    own = OpenAICompatibleProvider("https://api.openai.com/v1", "k", "gpt-5", max_output_tokens=500)
    local = OpenAICompatibleProvider("http://127.0.0.1:8080/v1", None, "gemma", max_output_tokens=500)
    unset = OpenAICompatibleProvider("http://127.0.0.1:8080/v1", None, "gemma")
    try:
        assert own._request_body([], None)["max_completion_tokens"] == 500
        assert "max_tokens" not in own._request_body([], None)
        assert local._request_body([], None)["max_tokens"] == 500
        assert "max_tokens" not in unset._request_body([], None)
    finally:
        for provider in (own, local, unset):
            await provider.aclose()


def history(exchanges: int = 40) -> list[dict]:
    """About 8,000 tokens: under the configured window's threshold, over the server's real window."""
    messages: list[dict] = []
    for n in range(exchanges):
        messages += [
            {"role": "user", "content": f"question {n}: " + "details " * 40},
            {"role": "assistant", "content": f"answer {n}: " + "prose " * 50},
        ]
    return messages


@pytest.mark.parametrize("style", ["llamacpp", "vllm-v1", "openai"])
async def test_issue_28_a_server_window_smaller_than_configured_is_learned_from_its_refusal(
    tmp_path: Path, folder, style
):
    """llama.cpp's ``exceed_context_size_error`` (``n_ctx``), vLLM's and OpenAI's "maximum context length is N
    tokens": the retry is planned for the server's window, later requests too, and the user is told once."""
    home = tmp_path / "home"
    home.mkdir()
    with FakeProvider(api_key=API_KEY, context_window=SERVER_WINDOW, ptl_style=style) as fake:
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW=str(CONFIGURED)) as agent:
            imported = await agent.client.request("importSession", {"cwd": str(folder), "messages": history()})
            sid = imported["sessionId"]
            first = await agent.turn(sid, "the next question")
            second = await agent.turn(sid, "and one more")
            other = await agent.client.request("importSession", {"cwd": str(folder), "messages": history()})
            third = await agent.turn(other["sessionId"], "another session on the same server")
    assert first["stopReason"] == second["stopReason"] == third["stopReason"] == "endTurn", (first, second, third)
    statuses = [r["status"] for r in model_requests(fake)]
    assert statuses == [400, 200, 200, 200]  # refused once; every later request planned for the server's window
    said = [u["message"] for u in agent.updates(sid, "notice")]
    assert len(said) == 1 and f"({SERVER_WINDOW:,} tokens" in said[0] and "larger than the server's" in said[0]
    assert not agent.updates(other["sessionId"], "notice")  # told once
    usage = agent.updates(sid, "usage")
    assert usage[-1]["contextWindowTokens"] == SERVER_WINDOW  # the meter shows the window really there

    # a new server process (each `threadline chat` starts one) plans the session for the window it was told
    with FakeProvider(api_key=API_KEY, context_window=SERVER_WINDOW, ptl_style=style) as fake:
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW=str(CONFIGURED)) as restarted:
            view = await restarted.client.request("getContextView", {"sessionId": sid})
            assert (await restarted.turn(sid, "after a restart"))["stopReason"] == "endTurn"
    assert [r["status"] for r in model_requests(fake)] == [200]
    assert not restarted.updates(sid, "notice")
    assert view["estimatedTokens"] <= SERVER_WINDOW


async def test_issue_28_a_server_stopping_at_max_tokens_gets_the_answer_continued(tmp_path: Path, folder):
    """The double stops a text answer at ``max_tokens`` as llama.cpp does (``finish_reason: "length"``)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[provider]\nmax_output_tokens = 5\n")
    with FakeProvider(api_key=API_KEY) as fake:
        fake.push({"content": "a long story that goes on"}, {"content": "the end"})
        async with running_agent(home, fake) as agent:
            sid = await agent.session(folder, policy="auto")
            assert (await agent.turn(sid, "tell me a story"))["stopReason"] == "endTurn"
            items = await agent.transcript(sid)
    assert [m["content"] for m in items if m["role"] == "assistant"] == ["a long story that go", "the end"]
    assert any("cut off at its output limit" in u["message"] for u in agent.updates(sid, "notice"))
