"""The web tools through the real server over stdio (SPEC B-WEB-1): pages served from 127.0.0.1, opened to the
server by ``THREADLINE_WEB_ALLOW_PRIVATE`` as a user would; a SearXNG-shaped double on the same server; approvals
per host answered by the test client; an unattended server (as ``threadline exec`` runs it) that asks nobody."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from server.cli.client import Client
from tests.e2e.agent_support import API_KEY, Agent, new_fake, running_agent, tool_messages
from tests.harness import initialize, kind_of, log_path, server_env, start_server
from tests.hooks.test_hooks_e2e import hook, project, seen, toml
from tests.tools.web.test_fetch import PAGE
from tests.tools.web.test_search import SEARXNG, json_answer
from tests.tools.web.web_support import PageServer, html, listening, serving

pytestmark = pytest.mark.asyncio(loop_scope="module")

BIG = ("".join(f"line {n}: some documentation text\n" for n in range(4000))).encode()


@pytest.fixture(scope="module")
def site() -> Iterator[PageServer]:
    routes = {
        "/docs": html(PAGE, "Widgets"),
        "/other": html("<p>another page</p>", "Other"),
        "/big.txt": (200, {"Content-Type": "text/plain"}, BIG),
        "/search": json_answer(SEARXNG),
    }
    with serving(routes) as server:
        yield server


def web_env(site: PageServer) -> dict[str, str]:
    return {
        "THREADLINE_WEB_ALLOW_PRIVATE": f"127.0.0.1:{site.port},localhost:{site.port}",
        "THREADLINE_WEB_SEARCH_PROVIDER": "searxng",
        "THREADLINE_WEB_SEARCH_URL": site.url("/"),
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agent(tmp_path_factory, site) -> AsyncIterator[Agent]:
    home = tmp_path_factory.mktemp("home")
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake, **web_env(site)) as a:
            yield a


@pytest.fixture(autouse=True)
def fresh(agent: Agent) -> None:
    agent.reset()
    agent.decide = lambda params: "allowAlways" if params["tool"] == "projectHooks" else "allowOnce"


def fetch(call_id: str, url: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "web_fetch", "arguments": {"url": url}}]}


def offered(request: dict) -> list[str]:
    body = request["body"]
    return [t.get("function", {}).get("name") or t.get("name") for t in body.get("tools") or []]


async def test_B_WEB_1_a_fetched_page_reaches_the_model_as_markdown_without_its_script(agent, site, folder):
    agent.fake.push(fetch("call_f", site.url("/docs")), {"content": "read it"})
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "read the docs"))["stopReason"] == "endTurn"
    assert agent.approvals == []  # auto asks nothing
    [result] = tool_messages(agent.chat_requests()[1])
    assert "# Installing widgets" in result["content"] and "```python\nimport widgets" in result["content"]
    assert "pwned" not in result["content"] and "tracker" not in result["content"]
    assert [u["status"] for u in agent.updates(sid, "toolResult")] == ["ok"]
    assert "web_fetch" in offered(agent.chat_requests()[0]) and "web_search" in offered(agent.chat_requests()[0])


async def test_B_WEB_1_ask_asks_per_host_and_always_remembers_only_that_host(agent, site, folder):
    answers = iter(["allowAlways", "allowOnce", "allowOnce"])
    agent.decide = lambda params: next(answers)
    agent.fake.push(
        fetch("c1", site.url("/docs")),
        fetch("c2", site.url("/other")),  # same host: remembered
        fetch("c3", site.url("/docs", host="localhost")),  # another host: asked
        fetch("c4", site.url("/other", host="localhost")),  # allowed once only: asked again
        {"content": "done"},
    )
    sid = await agent.session(folder, policy="ask")
    await agent.turn(sid, "read")
    assert [a["toolCallId"] for a in agent.approvals] == ["c1", "c3", "c4"]
    first = agent.approvals[0]
    assert first["tool"] == "web_fetch" and first["title"] == f"web_fetch: {site.url('/docs')}"
    assert "reaches that host, so it can carry data out" in first["detail"]
    assert '["Allow always" covers web_fetch of any URL on the host 127.0.0.1]' in first["detail"]
    assert [u["status"] for u in agent.updates(sid, "toolResult")] == ["ok"] * 4
    granted = (await agent.client.request("listApprovals", {"sessionId": sid}))["approvals"]
    assert [(g["tool"], g["covers"]) for g in granted] == [("web_fetch", "web_fetch of any URL on the host 127.0.0.1")]


async def test_B_WEB_1_autoEdit_asks_and_plan_mode_fetches_after_asking(agent, site, folder):
    agent.fake.push(fetch("c_edit", site.url("/docs")), {"content": "ok"})
    edit = await agent.session(folder, policy="autoEdit")
    await agent.turn(edit, "read")
    agent.fake.push(fetch("c_plan", site.url("/docs")), fetch("c_plan2", site.url("/other")), {"content": "ok"})
    plan = await agent.session(folder, policy="plan")
    answers = iter(["allowOnce", "reject"])
    agent.decide = lambda params: next(answers)
    await agent.turn(plan, "plan it")
    assert [a["toolCallId"] for a in agent.approvals] == ["c_edit", "c_plan", "c_plan2"]
    assert [u["status"] for u in agent.updates(edit, "toolResult")] == ["ok"]
    assert [u["status"] for u in agent.updates(plan, "toolResult")] == ["ok", "denied"]  # run, then rejected
    assert "plan mode" not in agent.updates(plan, "toolResult")[1]["content"]


async def test_B_WEB_1_an_address_not_opened_is_refused_through_the_server_and_nothing_connects(agent, folder):
    with listening() as listener, serving({}) as hop:
        hop.routes["/jump"] = (302, {"Location": f"http://127.0.0.1:{listener.port}/admin"}, b"")
        agent.fake.push(
            fetch("c_direct", f"http://127.0.0.1:{listener.port}/"),
            fetch("c_meta", "http://169.254.169.254/latest/meta-data/"),
            fetch("c_hop", hop.url("/jump")),
            {"content": "ok"},
        )
        sid = await agent.session(folder, policy="auto")
        await agent.turn(sid, "fetch")
        assert not listener.connected()
    results = agent.updates(sid, "toolResult")
    assert [r["status"] for r in results] == ["denied"] * 3
    assert results[0]["content"].startswith("Permission denied: 127.0.0.1 is a loopback address")
    assert results[1]["content"].startswith("Permission denied: 169.254.169.254 is a cloud metadata address")
    assert results[2]["content"].startswith("Permission denied: 127.0.0.1 is a loopback address")
    assert hop.requests == []  # its port is not opened either: refused before the first hop


async def test_a_big_page_is_kept_as_an_artifact(agent, site, folder):
    agent.fake.push(fetch("c_big", site.url("/big.txt")), {"content": "ok"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "read the big one")
    [created] = agent.updates(sid, "artifactCreated")
    [result] = agent.updates(sid, "toolResult")
    assert result["artifactId"] == created["artifactId"] and created["totalBytes"] > len(BIG)
    assert "Use read_artifact" in result["content"] and len(result["content"]) < 20_000
    read = await agent.client.request(
        "readArtifact", {"sessionId": sid, "artifactId": created["artifactId"], "search": {"pattern": "line 3999:"}}
    )
    assert len(read["matches"]) == 1


async def test_a_searxng_double_answers_web_search_through_the_server(agent, site, folder):
    agent.fake.push(
        {"tool_calls": [{"id": "c_s", "name": "web_search", "arguments": {"query": "pygls tutorial"}}]},
        {"content": "found it"},
    )
    sid = await agent.session(folder, policy="ask")
    await agent.turn(sid, "search")
    assert agent.approvals == []  # the configured provider is asked without asking the user
    [result] = tool_messages(agent.chat_requests()[1])
    assert result["content"].startswith('Results for "pygls tutorial" (searxng):\n\n1. pygls docs\n')
    assert any(path.startswith("/search?q=pygls+tutorial&format=json") for path, _ in site.requests)


async def test_B_HOOK_1_hooks_see_and_can_block_the_web_tools(agent, site, folder):
    project(
        folder,
        toml(
            [
                ("PreToolUse", hook("say", json.dumps({"decision": "deny", "reason": "no web today"})), "web_fetch"),
                ("PostToolUse", hook("ok"), "web_search"),
            ]
        ),
    )
    agent.fake.push(
        fetch("c_f", site.url("/docs")),
        {"tool_calls": [{"id": "c_s", "name": "web_search", "arguments": {"query": "widgets"}}]},
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "go")
    fetched, searched = agent.updates(sid, "toolResult")
    assert fetched["status"] == "denied" and "no web today" in fetched["content"]
    assert searched["status"] == "ok"
    inputs = [r["input"] for r in seen(folder)]
    assert [(i["hook_event_name"], i["tool_name"]) for i in inputs] == [
        ("PreToolUse", "web_fetch"),
        ("PostToolUse", "web_search"),
    ]
    assert inputs[0]["tool_input"] == {"url": site.url("/docs")}
    assert inputs[1]["tool_response"]["content"].startswith('Results for "widgets"')


async def test_B_WEB_1_unattended_a_host_no_rule_allows_is_refused_at_once(tmp_path, site, folder):
    """As ``threadline exec`` runs it: nobody is asked; ``[web] allow_hosts`` lets its host through, another host is
    refused with a result saying why; without a provider, ``web_search`` is not offered."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[web]\nallow_hosts = ["localhost"]\n')
    env = {k: v for k, v in web_env(site).items() if "SEARCH" not in k}
    with new_fake(api_key=API_KEY) as fake:
        fake.push(
            fetch("c_no", site.url("/docs")), fetch("c_yes", site.url("/docs", host="localhost")), {"content": "x"}
        )
        proc = await start_server(home, env=server_env(home, fake.url, THREADLINE_PROVIDER=kind_of(fake), **env))
        unattended = Agent(await initialize(Client(proc), {"unattended": True}), fake, home, log_path(home))
        try:
            sid = await unattended.session(folder, policy="ask")
            await unattended.turn(sid, "read both")
            requests = unattended.chat_requests()
        finally:
            await unattended.close()
    assert unattended.approvals == []
    refused, allowed = tool_messages(requests[-1])
    assert refused["content"].startswith("Permission denied: this is an unattended run")
    assert "it would reach 127.0.0.1, which no [web] allow_hosts rule allows" in refused["content"]
    assert "([web] allow_hosts): localhost" in refused["content"]
    assert "# Installing widgets" in allowed["content"]
    assert "web_search" not in offered(requests[0]) and "web_fetch" in offered(requests[0])
