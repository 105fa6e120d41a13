"""What the agent end-to-end tests share: a real server wired to the model-service double, in a temp home.

Nothing here stands in for our code: the server is ``python -m server`` over stdio, the provider is the fake's real
HTTP server (which validates every request as OpenAI does), and the store is a real SQLite file. A module shares
one ``Agent`` (one server, one fake); each test uses its own sessions and folders and resets the fake's script.

``THREADLINE_PROVIDER=anthropic`` (or ``openai-responses``) in the test run's environment runs the agent-loop
tests against that kind: ``new_fake`` then starts the matching strict double, the server is configured for the
kind, and ``request_messages`` reads each request back as Chat Completions messages, so assertions hold for all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from server.cli.client import Client
from tests.fakes import fake_anthropic, fake_responses
from tests.fakes.fake_provider import FakeProvider
from tests.harness import (
    API_KEY,
    KINDS,
    MODEL,
    PROVIDER,
    REPO,
    closing,
    initialize,
    kind_of,
    log_path,
    new_fake,
    server_env,
    start_server,
)

__all__ = [
    "API_KEY",
    "MODEL",
    "PROVIDER",
    "REPO",
    "Agent",
    "agent_fixture",
    "as_sent",
    "closing",
    "events",
    "fresh_fixture",
    "kind_of",
    "model_requests",
    "new_fake",
    "read_db",
    "request_messages",
    "running_agent",
    "server_env",
    "start_agent",
    "tool_messages",
]


class Agent:
    """One running server plus its fake provider; approvals are answered by ``decide`` (default allowOnce)."""

    def __init__(self, client: Client, fake: FakeProvider, home: Path, stderr_path: Path):
        self.client, self.fake, self.home, self.stderr_path = client, fake, home, stderr_path
        self.approvals: list[dict[str, Any]] = []
        self.decide: Callable[[Any], str] = lambda params: "allowOnce"
        client.on_request = self._answer

    def reset(self) -> None:
        """A fresh script on the double, no approvals seen, each answered ``allowOnce``: a test's starting point."""
        self.fake.reset()
        self.approvals.clear()
        self.decide = lambda params: "allowOnce"

    def _answer(self, method: str, params: Any) -> Any:
        assert method == "requestApproval", method
        self.approvals.append(params)
        return {"decision": self.decide(params)}

    async def session(self, cwd: Path, policy: str | None = None, sandbox: str | None = None) -> str:
        params: dict[str, Any] = {"cwd": str(cwd)}
        if policy:
            params["approvalPolicy"] = policy
        if sandbox:
            params["sandbox"] = sandbox
        return (await self.client.request("createSession", params))["sessionId"]

    async def turn(self, sid: str, text: str, timeout: float = 30) -> dict[str, Any]:
        return await asyncio.wait_for(self.client.request("submitTurn", {"sessionId": sid, "text": text}), timeout)

    def updates(self, sid: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            p["update"]
            for m, p in self.client.notifications
            if m == "sessionUpdate" and p["sessionId"] == sid and (kind is None or p["update"]["kind"] == kind)
        ]

    async def transcript(self, sid: str) -> list[dict[str, Any]]:
        return (await self.client.request("readTranscript", {"sessionId": sid}))["items"]

    def chat_requests(self) -> list[dict[str, Any]]:
        return model_requests(self.fake)

    async def wait_for(self, predicate, timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.02)

    async def close(self) -> int:
        """Stop the server (its client's ``close``)."""
        return await self.client.close()


async def start_agent(home: Path, fake: Any, **env: str) -> Agent:
    """A server on ``home`` (DEBUG log in ``log_path(home)``) configured for ``fake``'s provider kind."""
    proc = await start_server(
        home, "--log-level", "DEBUG", env=server_env(home, fake.url, **{"THREADLINE_PROVIDER": kind_of(fake), **env})
    )
    return Agent(await initialize(Client(proc)), fake, home, log_path(home))


def running_agent(home: Path, fake: Any, **env: str) -> contextlib.AbstractAsyncContextManager[Agent]:
    """``start_agent`` for the block (see ``closing``)."""
    return closing(start_agent(home, fake, **env))


def agent_fixture(
    *,
    config: str | Callable[[Path], str] | None = None,
    env: dict[str, str] | None = None,
    double: Callable[..., Any] = new_fake,
    **fake_options: Any,
):
    """A module-scoped ``agent`` fixture: one fake (``double``, by default the one for ``PROVIDER``, with
    ``API_KEY`` and ``fake_options``) and one server for the module, its environment having ``env``; with
    ``config``, the home's config.toml (text, or made from the home's path)."""

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def agent(tmp_path_factory) -> AsyncIterator[Agent]:
        home = tmp_path_factory.mktemp("home")
        if config is not None:
            (home / "config.toml").write_text(config(home) if callable(config) else config)
        with double(api_key=API_KEY, **fake_options) as fake:
            async with running_agent(home, fake, **(env or {})) as a:
                yield a

    return agent


def fresh_fixture():
    """An autouse fixture resetting the module's ``agent`` before each test (``Agent.reset``)."""

    @pytest.fixture(autouse=True)
    def fresh(agent: Agent) -> None:
        agent.reset()

    return fresh


def read_db(home: Path, sql: str, *args: Any) -> list[tuple]:
    """Read the server's SQLite file read-only (only after the server is done with what is asserted)."""
    conn = sqlite3.connect(f"file:{home / 'threadline.db'}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def events(home: Path, sid: str, kind: str) -> list[dict[str, Any]]:
    return [
        json.loads(p)
        for (p,) in read_db(home, "SELECT payload FROM events WHERE session_id = ? AND kind = ? ORDER BY id", sid, kind)
    ]


def model_requests(fake: Any) -> list[dict[str, Any]]:
    """The model calls the double received, in order."""
    return [{**r, "kind": kind_of(fake)} for r in fake.requests if r["path"].startswith(KINDS[kind_of(fake)][1])]


def request_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    """What a model call sent, as Chat Completions messages whatever the provider kind (records from
    ``model_requests``; a bare record is read as PROVIDER's)."""
    return KINDS[record.get("kind", PROVIDER)][2](record["body"])


def as_sent(messages: list[dict[str, Any]], kind: str = PROVIDER) -> list[dict[str, Any]]:
    """Stored (OpenAI-shaped) view messages as ``request_messages`` reads them once ``kind``'s provider has
    converted them for its API, so a view can be compared with a request of any kind."""
    if kind == "anthropic":
        from server.providers.anthropic_convert import convert_messages

        system, turns = convert_messages(messages)
        return fake_anthropic.openai_messages({"system": system, "messages": turns})
    if kind == "openai-responses":
        from server.providers.responses import input_items

        return fake_responses.openai_messages({"input": input_items(messages)})
    return messages


def request_tools(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool specs a model call offered, as Chat Completions ``{"type": "function", "function": {name,
    description, parameters}}`` whatever the kind (Anthropic's ``input_schema``, Responses' flat function tools)."""
    tools = record["body"].get("tools") or []
    kind = record.get("kind", PROVIDER)
    if kind == "openai":
        return tools
    schema = "input_schema" if kind == "anthropic" else "parameters"
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t[schema]},
        }
        for t in tools
    ]


def tool_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request_messages(record) if m["role"] == "tool"]
