"""What the agent end-to-end tests share: a real server wired to the model-service double, in a temp home.

Nothing here stands in for our code: the server is ``python -m server`` over stdio, the provider is the fake's real
HTTP server (which validates every request as OpenAI does), and the store is a real SQLite file. A module shares
one ``Agent`` (one server, one fake); each test uses its own sessions and folders and resets the fake's script.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from server.cli.client import Client
from tests.fakes.fake_provider import FakeProvider

REPO = Path(__file__).resolve().parents[2]
API_KEY = "sk-threadline-e2e-SECRET-5f1c9a"
MODEL = "fake-model"


def server_env(home: Path, fake_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    return {**env, "THREADLINE_HOME": str(home), "THREADLINE_BASE_URL": fake_url, "THREADLINE_MODEL": MODEL,
            "THREADLINE_API_KEY": API_KEY, **extra}


class Agent:
    """One running server plus its fake provider; approvals are answered by ``decide`` (default allowOnce)."""

    def __init__(self, client: Client, fake: FakeProvider, home: Path, stderr_path: Path):
        self.client, self.fake, self.home, self.stderr_path = client, fake, home, stderr_path
        self.approvals: list[dict[str, Any]] = []
        self.decide = lambda params: "allowOnce"
        client.on_request = self._answer

    def _answer(self, method: str, params: Any) -> Any:
        assert method == "requestApproval", method
        self.approvals.append(params)
        return {"decision": self.decide(params)}

    async def session(self, cwd: Path, policy: str | None = None) -> str:
        params: dict[str, Any] = {"cwd": str(cwd)}
        if policy:
            params["approvalPolicy"] = policy
        return (await self.client.request("createSession", params))["sessionId"]

    async def turn(self, sid: str, text: str, timeout: float = 30) -> dict[str, Any]:
        return await asyncio.wait_for(self.client.request("submitTurn", {"sessionId": sid, "text": text}), timeout)

    def updates(self, sid: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [p["update"] for m, p in self.client.notifications
                if m == "sessionUpdate" and p["sessionId"] == sid and (kind is None or p["update"]["kind"] == kind)]

    async def transcript(self, sid: str) -> list[dict[str, Any]]:
        return (await self.client.request("readTranscript", {"sessionId": sid}))["items"]

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.fake.requests if r["path"].startswith("/v1/chat")]

    async def wait_for(self, predicate, timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.02)


async def start_agent(home: Path, fake: FakeProvider, **env: str) -> Agent:
    stderr_path = home.parent / f"{home.name}-stderr.log"
    stderr = open(stderr_path, "wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", "--log-level", "DEBUG",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
        env=server_env(home, fake.url, **env), cwd=str(REPO), limit=1 << 24)
    stderr.close()
    client = Client(proc)
    client.initialize_result = await client.request("initialize", {
        "processId": os.getpid(), "capabilities": {}, "rootUri": None, "initializationOptions": {}})
    client.notify("initialized", {})
    return Agent(client, fake, home, stderr_path)


def agent_fixture(**fake_options: Any):
    """A module-scoped ``agent`` fixture: one fake (with ``API_KEY``) and one server for the module."""

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def agent(tmp_path_factory) -> AsyncIterator[Agent]:
        home = tmp_path_factory.mktemp("home")
        with FakeProvider(api_key=API_KEY, **fake_options) as fake:
            a = await start_agent(home, fake)
            try:
                yield a
            finally:
                await a.client.close()

    return agent


def read_db(home: Path, sql: str, *args: Any) -> list[tuple]:
    """Read the server's SQLite file read-only (only after the server is done with what is asserted)."""
    conn = sqlite3.connect(f"file:{home / 'threadline.db'}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def events(home: Path, sid: str, kind: str) -> list[dict[str, Any]]:
    return [json.loads(p) for (p,) in read_db(home, "SELECT payload FROM events WHERE session_id = ? AND kind = ? "
                                                    "ORDER BY id", sid, kind)]


def request_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    return record["body"]["messages"]


def tool_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request_messages(record) if m["role"] == "tool"]
