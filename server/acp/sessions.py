"""Session lifecycle over the shared store: what ``session/new|load|resume|list|close|set_mode`` and
``session/set_config_option`` (the model) do.

Thin services for the ACP handlers: a session here is a Threadline session (same store, same ids), so one made
over ACP is listed by ``listSessions`` and one made over Threadline's protocol loads over ACP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp.schema import (
    ConfigOptionUpdate,
    CurrentModeUpdate,
    ListSessionsResponse,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
)

from server.acp.client import AcpClient
from server.acp.history import history_updates
from server.config import ProviderSettings
from server.errors import InvalidParams
from server.security import redaction
from server.services import history, models, sandbox
from server.services import sessions as service
from server.services.core import Core
from server.services.turns import cancel_running_turn
from server.transcript import StoredSession

MODES = [
    SessionMode(id="ask", name="Ask", description="Ask before file edits and commands"),
    SessionMode(
        id="autoEdit",
        name="Auto edit",
        description="Edit files and run sandboxed commands without asking; ask before a command runs outside the "
        "sandbox (or any command where the sandbox cannot be enforced)",
    ),
    SessionMode(id="auto", name="Auto", description="Run edits and commands without asking"),
    SessionMode(id="plan", name="Plan", description="Read and plan only: no edits, commands or MCP tools"),
]
MODEL_OPTION = "model"  # the config option that picks a session's [models.NAME]
MODE_OPTION = "mode"  # the approval policy again, as a config option (category ``mode``), beside the model
DEFAULT_MODEL = "default"  # its value for the server's default provider (config.py reserves the name)
PAGE = 50


def modes(core: Core, session: StoredSession) -> SessionModeState:
    return SessionModeState(current_mode_id=models.session_policy(core.settings, session), available_modes=MODES)


ConfigOptions = list[SessionConfigOptionSelect | SessionConfigOptionBoolean]


async def config_options(core: Core, session: StoredSession) -> ConfigOptions:
    """The approval policy (always: clients that see config options drop the legacy ``modes``), the model picker
    (when ``[models.NAME]`` are configured) and the sandbox mode (B-SBX-1)."""
    return [_mode_option(core, session), *_model_option(core, session), await _sandbox_option(core, session)]


def _mode_option(core: Core, session: StoredSession) -> SessionConfigOptionSelect:
    """The approval policy as a config option (category ``mode``), kept in sync with ``session/set_mode`` both
    ways: ACP advises clients to use config options when present and drop ``modes``, so without it a client that
    sees the sandbox option could not switch the policy at all."""
    return SessionConfigOptionSelect(
        type="select",
        id=MODE_OPTION,
        name="Approvals",
        category="mode",
        description="What asks before it runs: file edits and commands",
        current_value=modes(core, session).current_mode_id,
        options=[SessionConfigSelectOption(value=m.id, name=m.name, description=m.description) for m in MODES],
    )


SANDBOX_OPTION = "sandbox"
_SANDBOX_CHOICES = [
    SessionConfigSelectOption(
        value="workspace-write", name="Workspace write", description="Commands write only in the folder; no network"
    ),
    SessionConfigSelectOption(value="read-only", name="Read only", description="Commands write nothing; no network"),
    SessionConfigSelectOption(value="off", name="Off", description="Commands run with all your rights"),
]


async def _sandbox_option(core: Core, session: StoredSession) -> SessionConfigOptionSelect:
    mode, status = await sandbox.current_mode(core, session.id, Path(session.cwd))
    state = "enforced" if status.enforced else f"NOT enforced: {status.reason}" if mode != "off" else "off"
    return SessionConfigOptionSelect(
        type="select",
        id=SANDBOX_OPTION,
        name="Sandbox",
        description=f"How the agent's commands are confined, from the next turn ({state})",
        current_value=mode,
        options=_SANDBOX_CHOICES,
    )


def _model_option(core: Core, session: StoredSession) -> ConfigOptions:
    """The model picker (the default provider and each ``[models.NAME]``); none when no models are configured."""
    if not core.settings.models:
        return []
    choices = [
        _model_choice(
            DEFAULT_MODEL, f"Default ({core.settings.provider.model or 'not configured'})", core.settings.provider
        )
    ]
    choices += [_model_choice(name, name, p) for name, p in core.settings.models.items()]
    return [
        SessionConfigOptionSelect(
            type="select",
            id=MODEL_OPTION,
            name="Model",
            category="model",
            description="The model this session talks to, from its next model call",
            current_value=session.model or DEFAULT_MODEL,
            options=choices,
        ),
    ]


def _model_choice(value: str, name: str, p: ProviderSettings) -> SessionConfigSelectOption:
    return SessionConfigSelectOption(value=value, name=name, description=models.describe_provider(p))


async def set_config_option(
    core: Core, client: AcpClient, session_id: str, config_id: str, value: str | bool
) -> ConfigOptions:
    """``session/set_config_option``: the model (stored with the session, used from its next model call) or the
    approval policy (as ``session/set_mode``, which also tells the client with ``current_mode_update``)."""
    if config_id == SANDBOX_OPTION:  # the sandbox mode, from the session's next turn (B-SBX-1)
        if value not in {c.value for c in _SANDBOX_CHOICES}:
            raise InvalidParams(f"the {SANDBOX_OPTION} option takes workspace-write, read-only or off, got {value!r}")
        await sandbox.set_mode(core, session_id, str(value))
        return await config_options(core, await service.stored(core, session_id))
    if config_id not in (MODEL_OPTION, MODE_OPTION) or (config_id == MODEL_OPTION and not core.settings.models):
        raise InvalidParams(f"unknown config option {config_id!r}", code="UnknownConfigOption")
    if not isinstance(value, str):
        raise InvalidParams(f"the {config_id} option takes a name, got {value!r}")
    if config_id == MODE_OPTION:
        await _store_mode(core, session_id, value)
        client.send_update(session_id, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=value))
        await client.flush()
    else:
        await service.update_session(core, session_id, model=None if value == DEFAULT_MODEL else value)
    return await config_options(core, await service.stored(core, session_id))


async def keep_mcp_servers(core: Core, session_id: str, servers: list[Any] | None) -> None:
    """Hand the client's MCP servers to the MCP client (started on the session's turns). Kept in memory only:
    their ``env`` and ``headers`` may hold secrets, so they are never stored (clients send them on every
    ``session/new|load|resume``)."""
    if not servers:
        return
    dumped = [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in servers]
    for server in dumped:
        for pair in [*(server.get("env") or []), *(server.get("headers") or [])]:
            redaction.add_secret(pair.get("value"))
    await service.keep_mcp_servers(core, session_id, dumped)


async def new_session(core: Core, client: AcpClient, cwd: str, servers: list[Any] | None) -> StoredSession:
    session = await service.create_session(core, cwd)
    await keep_mcp_servers(core, session.id, servers)
    client.open_session(session.id, session.cwd)
    return session


async def open_session(core: Core, client: AcpClient, session_id: str, servers: list[Any] | None) -> StoredSession:
    """``session/resume``: the stored session, ready for prompts in this connection."""
    session = await service.stored(core, session_id)
    await keep_mcp_servers(core, session.id, servers)
    client.open_session(session.id, session.cwd)
    return session


async def load_session(core: Core, client: AcpClient, session_id: str, servers: list[Any] | None) -> StoredSession:
    """``session/load``: open it, then replay the whole conversation before the answer goes out."""
    session = await open_session(core, client, session_id, servers)
    live = client.live[session.id]
    for update in history_updates(await history.all_messages(core, session.id), live.cwd):
        client.send_update(session.id, update)
    await client.flush()
    return session


async def list_sessions(core: Core, cwd: str | None, cursor: str | None) -> ListSessionsResponse:
    """The sessions to pick from, newest first: not one nobody prompted (a client such as avante opens a session
    for each sidebar; listed, each would be an empty "New session"), unless it was given a title."""
    start = _offset(cursor)
    listed, _ = await service.list_sessions(core, cwd, None, False)
    found = [s for s in listed if s.message_count or s.title != service.UNTITLED]
    page = found[start : start + PAGE]
    more = len(found) > start + PAGE
    return ListSessionsResponse(
        sessions=[SessionInfo(session_id=s.id, cwd=s.cwd, title=s.title, updated_at=s.updated_at) for s in page],
        next_cursor=str(start + PAGE) if more else None,
    )


async def announce_title(core: Core, client: AcpClient, before: StoredSession) -> None:
    """A session that had no title when its prompt began is named after that prompt (``Store.title_from_prompt``):
    the client hears it with ``session_info_update``, as it would in ``session/list``."""
    if before.title != service.UNTITLED:
        return
    after = await service.stored(core, before.id)
    if after.title != before.title:
        update = SessionInfoUpdate(session_update="session_info_update", title=after.title, updated_at=after.updated_at)
        client.send_update(after.id, update)
        await client.flush()


async def close_session(core: Core, client: AcpClient, session_id: str) -> None:
    """Cancel what runs in the session and forget it in this connection; nothing stored is touched."""
    await service.stored(core, session_id)  # SessionNotFound
    if cancel_running_turn(core, session_id, queued=True):  # its queued prompts too (B-ACP-1)
        await client.flush()
    client.close_session(session_id)
    await service.forget_mcp_servers(core, session_id)


async def set_mode(core: Core, client: AcpClient, session_id: str, mode_id: str) -> None:
    """``session/set_mode``; where the policy is also a config option, the client hears of both."""
    await _store_mode(core, session_id, mode_id)
    client.send_update(session_id, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id))
    options = await config_options(core, await service.stored(core, session_id))
    if options:
        client.send_update(
            session_id, ConfigOptionUpdate(session_update="config_option_update", config_options=options)
        )
    await client.flush()


async def _store_mode(core: Core, session_id: str, mode_id: str) -> None:
    if mode_id not in {m.id for m in MODES}:
        raise InvalidParams(f"unknown mode {mode_id!r}; modes: {', '.join(m.id for m in MODES)}", code="UnknownMode")
    await service.update_session(core, session_id, approval_policy=mode_id)


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise InvalidParams(
            f"invalid cursor {cursor!r}: pass back a nextCursor from session/list", code="InvalidCursor"
        )
    return int(cursor)
