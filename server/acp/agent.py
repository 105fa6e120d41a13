"""The ACP methods: one short handler each, over ``server.acp.sessions`` and Threadline's turn service.

Every handler goes through ``edge``, which turns domain errors into ACP errors (``server.acp.errors``).
Extension methods ``_threadline/<method>`` serve Threadline's own context methods (context view, compact now,
artifacts, transcript search) with their Threadline params and results, so an ACP client can see what the model sees.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    CloseSessionResponse,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

import server.methods  # noqa: F401  (registers the Threadline handlers the extensions serve)
from protocol.messages import Image, SubmitTurnParams
from server import __version__
from server.acp import sessions
from server.acp.client import AcpClient
from server.acp.commands import CommandWatch
from server.acp.errors import to_acp_error, turn_failed
from server.acp.prompt import prompt_context, user_message
from server.acp.updates import agent_text
from server.acp.wrapping import is_wrapped, unwrap
from server.edge.dispatch import call, decode_params, run_handler, under_contract
from server.edge.errors import INTERNAL_ERROR
from server.methods.registry import HANDLERS
from server.services import history
from server.services.core import Core
from server.services.sessions import is_running
from server.services.turns import cancel_running_turn

log = logging.getLogger(__name__)

STOP_REASONS: dict[str, Literal["end_turn", "cancelled", "max_turn_requests"]] = {
    "endTurn": "end_turn",
    "cancelled": "cancelled",
    "maxIterations": "max_turn_requests",
}
EXTENSIONS = ("getContextView", "readArtifact", "searchTranscript", "compactSession")
QUEUED = "(queued: a turn is running in this session; this message runs when it ends)\n\n"
AUTH_NOTE = (
    "Threadline needs no sign-in: the model provider's key comes from THREADLINE_API_KEY (or "
    "$THREADLINE_HOME/config.toml) in the agent's environment"
)


_Handler = TypeVar("_Handler", bound=Callable[..., Awaitable[Any]])


def edge(fn: _Handler) -> _Handler:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = to_acp_error(exc)
            if error.code == INTERNAL_ERROR:
                log.error("%s failed", fn.__name__, exc_info=exc)
            raise error from None

    return cast(_Handler, wrapper)


class ThreadlineAgent:
    def __init__(self, core: Core, client: AcpClient):
        self.core, self.client = core, client
        self.commands = CommandWatch(client, core.settings.home)

    def on_connect(self, conn: Client) -> None:
        self.client.attach(conn)

    @edge
    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any
    ) -> InitializeResponse:
        capabilities = AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=False),  # stdio and streamable HTTP (server.mcp)
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(), resume=SessionResumeCapabilities(), close=SessionCloseCapabilities()
            ),
        )
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=capabilities,
            auth_methods=[],
            agent_info=Implementation(name="threadline", title="Threadline", version=__version__),
        )

    @edge
    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        return AuthenticateResponse(field_meta={"threadline": {"note": AUTH_NOTE}})

    @edge
    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> NewSessionResponse:
        session = await under_contract(
            "createSession", self.core, None, lambda: sessions.new_session(self.core, self.client, cwd, mcp_servers)
        )
        self.commands.announce(session.id, Path(session.cwd))  # queued: written after this answer
        return NewSessionResponse(
            session_id=session.id,
            modes=sessions.modes(self.core, session),
            config_options=await sessions.config_options(self.core, session),
        )

    @edge
    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **_: Any) -> LoadSessionResponse:
        session = await under_contract(
            "readTranscript",
            self.core,
            session_id,
            lambda: sessions.load_session(self.core, self.client, session_id, mcp_servers),
        )
        self.commands.announce(session.id, Path(session.cwd))
        return LoadSessionResponse(
            modes=sessions.modes(self.core, session), config_options=await sessions.config_options(self.core, session)
        )

    @edge
    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: Any = None, **_: Any
    ) -> ResumeSessionResponse:
        session = await under_contract(
            "attachSession",
            self.core,
            session_id,
            lambda: sessions.open_session(self.core, self.client, session_id, mcp_servers),
        )
        self.commands.announce(session.id, Path(session.cwd))
        return ResumeSessionResponse(
            modes=sessions.modes(self.core, session), config_options=await sessions.config_options(self.core, session)
        )

    @edge
    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> ListSessionsResponse:
        return await under_contract(
            "listSessions", self.core, None, lambda: sessions.list_sessions(self.core, cwd, cursor)
        )

    @edge
    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        await under_contract(
            "cancelTurn", self.core, session_id, lambda: sessions.close_session(self.core, self.client, session_id)
        )
        return CloseSessionResponse()

    @edge
    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> SetSessionModeResponse:
        await under_contract(
            "updateSession",
            self.core,
            session_id,
            lambda: sessions.set_mode(self.core, self.client, session_id, mode_id),
        )
        return SetSessionModeResponse()

    @edge
    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        options = await under_contract(
            "updateSession",
            self.core,
            session_id,
            lambda: sessions.set_config_option(self.core, self.client, session_id, config_id, value),
        )
        return SetSessionConfigOptionResponse(config_options=options)

    @edge
    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        session = await under_contract(
            "attachSession",
            self.core,
            session_id,
            lambda: sessions.open_session(self.core, self.client, session_id, None),
        )
        blocks, context = prompt_context(prompt, Path(session.cwd))  # files the user points at
        text, images = user_message(blocks)
        if is_wrapped(text):  # avante's repeats and context line (server.acp.wrapping)
            earlier = await under_contract(
                "readTranscript", self.core, session.id, lambda: history.all_messages(self.core, session.id)
            )
            text = unwrap(text, (m.content or "" for m in earlier if m.role == "user"))
        params = SubmitTurnParams(
            session_id=session.id,
            text=text,
            images=[Image(mime_type=i["mimeType"], data=i["data"]) for i in images] or None,
            context=context or None,
            queue=True,  # a prompt sent while a turn runs waits for it, as submitTurn {queue} does
        )
        if is_running(self.core, session.id):
            self.client.send_update(session.id, agent_text(QUEUED))
        result = await call("submitTurn", self.core, params)  # its handler: images are checked there
        if result.command is not None:  # a built-in slash command answered without a model call
            self.client.send_update(session.id, agent_text(result.command.output + "\n"))
            if result.command.name == "plan":
                update = CurrentModeUpdate(session_update="current_mode_update", current_mode_id="plan")
                self.client.send_update(session.id, update)
        await self.client.flush()  # every update of the turn reaches the client before its answer
        await under_contract(
            "readTranscript", self.core, session_id, lambda: sessions.announce_title(self.core, self.client, session)
        )
        if result.stop_reason == "error":
            error = result.error
            raise turn_failed(error.code if error else "TurnFailed", error.message if error else "the turn failed")
        return PromptResponse(stop_reason=STOP_REASONS[result.stop_reason])

    async def cancel(self, session_id: str, **_: Any) -> None:
        self.client.cancel_prompt(session_id)  # an open permission request is the client's to answer `cancelled`
        cancel_running_turn(self.core, session_id, queued=True)  # every open prompt then answers `cancelled`

    @edge
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        prefix, _, name = method.partition("/")
        if prefix != "threadline" or name not in EXTENSIONS:
            raise RequestError.method_not_found(f"_{method}")
        result: dict[str, Any] = await run_handler(HANDLERS[name], self.core, decode_params(name, params))
        await self.client.flush()  # what it announced (a compaction) arrives before its answer
        return result

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("ignored extension notification _%s", method)
