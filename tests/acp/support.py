"""A real ``threadline acp`` process driven by the official SDK's client side, with the model double behind it.

Every message the agent writes is kept (``AcpAgent.received``) so a test can check each one against the official
ACP v1 JSON schema (``acp_schema_v1.json``, see ACP_SCHEMA_NOTICE.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import pytest_asyncio
from acp import spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY, REPO, log_path, server_env, watch_log

SCHEMA = json.loads((Path(__file__).parent / "acp_schema_v1.json").read_text(encoding="utf-8"))
RESULT_DEFS = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/resume": "ResumeSessionResponse",
    "session/close": "CloseSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/prompt": "PromptResponse",
}
PARAMS_DEFS = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
    "$/cancel_request": "CancelRequestNotification",
}


def write_call(call_id: str, path: str, content: str = "x\n") -> dict:
    return {"tool_calls": [{"id": call_id, "name": "write_file", "arguments": {"path": path, "content": content}}]}


def command_call(call_id: str, command: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"command": command}}]}


def validator(name: str | None = None) -> jsonschema.protocols.Validator:
    schema = SCHEMA if name is None else {"$ref": f"#/$defs/{name}", "$defs": SCHEMA["$defs"]}
    return jsonschema.Draft202012Validator(schema)


def schema_errors(received: list[dict[str, Any]], sent_methods: dict[Any, str]) -> list[str]:
    """Every way an agent message breaks the schema: as an agent message, and as its method's params or result."""
    whole, errors = validator(), []
    for msg in received:
        problems = [e.message for e in whole.iter_errors(msg)]
        if "method" in msg and msg["method"] in PARAMS_DEFS:
            problems += [e.message for e in validator(PARAMS_DEFS[msg["method"]]).iter_errors(msg.get("params"))]
        elif "result" in msg and sent_methods.get(msg["id"]) in RESULT_DEFS:
            problems += [e.message for e in validator(RESULT_DEFS[sent_methods[msg["id"]]]).iter_errors(msg["result"])]
        elif "error" in msg:
            problems += [e.message for e in validator("Error").iter_errors(msg["error"])]
        elif "method" not in msg and "result" not in msg:
            problems.append("neither a request, a notification nor a response")
        errors += [f"{json.dumps(msg)[:300]}: {p}" for p in problems]
    return errors


class Editor:
    """The client half: records updates, answers permission requests with ``decide`` (an option id, or None for
    ``cancelled``); ``hold`` makes it wait for ``release`` before answering (a permission left open)."""

    decide: Callable[[Any], str | None]

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[Any] = []
        self.offered: list[list[str]] = []  # each request's option ids, in order
        self.reset()

    def reset(self) -> None:
        """Back to answering every permission request at once with ``allow_once``, none asked yet."""
        self.permissions.clear()
        self.offered.clear()
        self.decide = lambda request: "allow_once"
        self.hold = False
        self.release = asyncio.Event()
        self.asked = asyncio.Event()

    async def request_permission(self, options, session_id, tool_call, **kwargs: Any) -> RequestPermissionResponse:
        self.permissions.append(tool_call)
        self.offered.append([option.option_id for option in options])
        self.asked.set()
        if self.hold:
            await self.release.wait()
        choice = self.decide(tool_call)
        outcome = (
            DeniedOutcome(outcome="cancelled")
            if choice is None
            else AllowedOutcome(outcome="selected", option_id=choice)
        )
        return RequestPermissionResponse(outcome=outcome)

    async def session_update(self, session_id, update, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def of(self, session_id: str, kind: str | None = None) -> list[Any]:
        """The session's updates of ``kind``; with no kind, every update but ``available_commands_update``, which
        the agent sends on its own schedule (after session/new and load, and when the command files change), so it
        may land between any two others."""
        if kind is None:
            return [u for s, u in self.updates if s == session_id and u.session_update != "available_commands_update"]
        return [u for s, u in self.updates if s == session_id and u.session_update == kind]


class AcpAgent:
    def __init__(self, conn, proc, editor: Editor, fake: FakeProvider, home: Path):
        self.conn, self.proc, self.editor, self.fake, self.home = conn, proc, editor, fake, home
        self.received: list[dict[str, Any]] = []  # every message the agent wrote
        self.sent_methods: dict[Any, str] = {}  # id -> method of the requests the client sent
        self.init: Any = None  # the initialize response, once the fixture has sent it

    def observe(self, event: StreamEvent) -> None:
        if event.direction == StreamDirection.INCOMING:
            self.received.append(event.message)
        elif "method" in event.message and "id" in event.message:
            self.sent_methods[event.message["id"]] = event.message["method"]

    async def prompt(self, sid: str, text: str, timeout: float = 30):
        return await asyncio.wait_for(self.conn.prompt(session_id=sid, prompt=[text_block(text)]), timeout)

    async def wait_for(self, predicate, timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def start_acp(home: Path, fake: FakeProvider, **env: str) -> AsyncIterator[AcpAgent]:
    editor = Editor()
    stderr = open(log_path(home), "ab")  # noqa: SIM115 - closed when the agent ends, below
    holder: list[AcpAgent] = []
    # Editor implements only the Client methods these tests need, so it is not a full acp.Client to mypy.
    async with spawn_agent_process(
        editor,  # type: ignore[arg-type]
        sys.executable,
        "-m",
        "server",
        "acp",
        "--log-level",
        "DEBUG",
        env=server_env(home, fake.url, **env),
        cwd=str(REPO),
        transport_kwargs={"stderr": stderr.fileno(), "limit": 1 << 24},
        observers=[lambda e: holder[0].observe(e) if holder else None],
    ) as (conn, proc):
        agent = AcpAgent(conn, proc, editor, fake, home)
        holder.append(agent)
        watch_log(log_path(home), lambda: proc.returncode is None)
        try:
            yield agent
        finally:
            stderr.close()


def acp_fixture(config: str | None = None, **fake_options: Any):
    """A module-scoped ``acp`` fixture: one fake (with ``API_KEY``) and one ``threadline acp``, initialized; with
    ``config``, the home's config.toml."""

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def acp(tmp_path_factory) -> AsyncIterator[AcpAgent]:
        home = tmp_path_factory.mktemp("home")
        if config is not None:
            (home / "config.toml").write_text(config)
        with FakeProvider(api_key=API_KEY, **fake_options) as fake:
            async with start_acp(home, fake) as agent:
                agent.init = await agent.conn.initialize(protocol_version=1)
                yield agent

    return acp


def fresh_fixture():
    """An autouse fixture for a module on ``acp``: each test starts with a fresh script and an editor answering
    ``allow_once``; after it, every message the agent has written is checked against the official schema."""

    @pytest.fixture(autouse=True)
    def fresh(acp: AcpAgent) -> Iterator[None]:
        acp.fake.reset()
        acp.editor.reset()
        yield
        assert schema_errors(acp.received, acp.sent_methods) == []

    return fresh


async def new(acp: AcpAgent, folder: Path) -> str:
    """A new session in ``folder``, with no MCP servers of the client's."""
    return (await acp.conn.new_session(cwd=str(folder), mcp_servers=[])).session_id
