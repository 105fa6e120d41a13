"""SPEC B-WEB-2 through the real server: pages that used to end the turn or freeze the server, served from
127.0.0.1 (opened by ``THREADLINE_WEB_ALLOW_PRIVATE``) to a turn whose scripted model calls ``web_fetch``: an
unreadable ``Location``, a two-layer gzip bomb and a page nested 20,000 deep each come back as a result the model
reads and the turn ends normally; and through the daemon, a second client's ``listSessions`` answers within 1 s
while a flat 2 MB page is being converted."""

from __future__ import annotations

import asyncio
import gzip
import time
from pathlib import Path

import pytest

from tests.e2e.agent_support import API_KEY, new_fake, start_agent, tool_messages
from tests.e2e.daemon_support import bridge, daemon_env, daemon_pid, fake_fixture, open_home_fixture
from tests.tools.web.test_web_bounds import deep, zeros_gzipped
from tests.tools.web.web_support import html, serving

pytestmark = pytest.mark.asyncio
open_home = open_home_fixture()
fake = fake_fixture()


def fetch(call_id: str, url: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "web_fetch", "arguments": {"url": url}}]}


def opened(port: int) -> dict[str, str]:
    return {"THREADLINE_WEB_ALLOW_PRIVATE": f"127.0.0.1:{port}"}


async def test_B_WEB_2_pages_that_ended_the_turn_are_results_the_model_reads(tmp_path):
    routes = {
        "/jump": (302, {"Location": "http:x:1/y"}, b""),
        "/bomb": (
            200,
            {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"},
            gzip.compress(zeros_gzipped()),
        ),
        "/deep": html(deep(20_000), "Deep"),
    }
    folder = tmp_path / "ws"
    folder.mkdir()
    with serving(routes) as site, new_fake(api_key=API_KEY) as model:
        model.push(
            fetch("c_jump", site.url("/jump")),
            fetch("c_bomb", site.url("/bomb")),
            fetch("c_deep", site.url("/deep")),
            {"content": "read them all"},
        )
        agent = await start_agent(tmp_path / "home", model, **opened(site.port))
        try:
            sid = await agent.session(folder, policy="auto")
            done = await agent.turn(sid, "read these", timeout=120)
            requests = agent.chat_requests()
        finally:
            await agent.client.close()
    assert done["stopReason"] == "endTurn"
    jump, bomb, deeply = (r["content"] for r in tool_messages(requests[-1]))
    assert jump.startswith(f"Tool failed: {site.url('/jump')} answered with a URL that cannot be read"), jump
    assert "2 content codings (gzip, gzip)" in bomb and "over the 10485760 byte limit" in bomb, bomb
    assert "given as plain text, not Markdown: its elements nest 20004 deep" in deeply and "the bottom" in deeply
    assert [u["status"] for u in agent.updates(sid, "toolResult")] == ["error", "error", "ok"]


def converters(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"convert_worker.py" not in (entry / "cmdline").read_bytes():
                continue
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent:
            found.append(int(entry.name))
    return found


async def test_B_WEB_2_another_client_is_answered_while_a_2_MB_page_converts(open_home, fake, folder):
    flat = "<p>some <b>text</b> to read, and a <a href='/x'>link</a></p>" * 36_000  # ~2 MB, depth 3
    with serving({"/flat": html(flat, "Flat")}) as site:
        env = daemon_env(open_home, fake, **opened(site.port))
        fetching, asking = await bridge(env, open_home), await bridge(env, open_home)
        try:
            daemon = daemon_pid(open_home)
            assert daemon is not None
            sid = (await fetching.request("createSession", {"cwd": str(folder), "approvalPolicy": "auto"}))["sessionId"]
            fake.push(fetch("c_flat", site.url("/flat")), {"content": "read it"})
            turn = asyncio.ensure_future(fetching.request("submitTurn", {"sessionId": sid, "text": "read it"}))
            answered_while_converting: list[float] = []
            async with asyncio.timeout(180):
                while not turn.done():
                    before = bool(converters(daemon))
                    start = time.monotonic()
                    listed = await asyncio.wait_for(asyncio.shield(asking.request("listSessions", {})), 30)
                    took = time.monotonic() - start
                    if before and converters(daemon):
                        answered_while_converting.append(took)
                        assert any(s["sessionId"] == sid for s in listed["sessions"])
                    await asyncio.sleep(0.05)
            assert (await turn)["stopReason"] == "endTurn"
            [result] = [
                p["update"]
                for m, p in fetching.notifications
                if m == "sessionUpdate" and p["update"]["kind"] == "toolResult"
            ]
        finally:
            await fetching.close()
            await asking.close()
    assert answered_while_converting, "no listSessions was answered while the page converted"
    assert max(answered_while_converting) < 1.0, answered_while_converting
    # As Markdown (``some **text** to read``) when it converted in time, as plain text when it did not
    assert result["status"] == "ok" and "some text to read" in result["content"].replace("**", "")
    assert converters(daemon) == []  # the converter does not outlive its page
