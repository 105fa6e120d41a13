"""MCP for sessions: which servers a session gets, the project-server approval, and its frozen tool list.

A session's MCP tools are frozen on its first turn (R-FRZ-1, like the rest of the session context): the servers
that came up within their start-up timeout give their tools, and the list is stored as an ``mcpToolsFrozen``
event (names, descriptions and schemas only), so later turns, restarts and the budget see the same definitions.
Servers that fail are ``notice``s and ``mcpServerStatus`` updates, never a failed turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from protocol import updates as u
from protocol.messages import McpServerInfo, McpToolInfo
from server.emit import Emitter, Notify
from server.errors import McpConfigError
from server.mcp.config import McpServerConfig, client_server, read_project_servers
from server.mcp.manager import McpManager
from server.mcp.names import model_tool_name
from server.security.project_approval import Ask, ProjectItem, ProjectTrust, approve
from server.tools.base import Tool, ToolContext, ToolFailure

if TYPE_CHECKING:  # the MCP SDK (and pydantic under it) loads only when a server is started: ~35 MB of RSS
    from server.mcp.connection import Launch, McpConnection
    from server.transcript import Store

log = logging.getLogger(__name__)

FROZEN_EVENT = "mcpToolsFrozen"
TRUST_FILE = "mcp-trust.json"


@dataclass
class McpChoices:
    """What was decided about one session's MCP servers, held by its handle (``server.sessions.Session.mcp``); in
    memory only (their env and headers may hold secrets)."""

    client_servers: list[McpServerConfig] = field(default_factory=list)  # createSession / ACP ``mcpServers``
    # project server's configuration key -> allowed, for this session. Keyed on the exact command, arguments and
    # environment, never the name: a rewritten .mcp.json under the same name asks again.
    decided: dict[str, bool] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.client_servers or self.decided)


@dataclass(frozen=True)
class FrozenTool:
    name: str  # the model's name for it
    server: str
    tool: str
    description: str
    parameters: dict[str, Any]


@dataclass
class FrozenTools:
    servers: list[str] = field(default_factory=list)
    tools: list[FrozenTool] = field(default_factory=list)

    def specs(self) -> list[dict[str, Any]]:
        return [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in self.tools
        ]


async def load_frozen(store: Store, session_id: str) -> FrozenTools | None:
    events = await store.list_events(session_id, FROZEN_EVENT)
    if not events:
        return None
    payload = events[-1].payload
    return FrozenTools(list(payload.get("servers", [])), [FrozenTool(**t) for t in payload.get("tools", [])])


class McpService:
    def __init__(
        self, home: Path, user_servers: tuple[McpServerConfig, ...], notify: Notify, launch: Launch | None = None
    ):
        self.manager = McpManager(home / "mcp-logs", self._status, launch=launch)
        self.trust = ProjectTrust(home, TRUST_FILE)  # "allow always" for project servers
        self.user_servers = user_servers
        self._notify = notify  # what is decided for a session is in its ``McpChoices``

    # --- configuration -------------------------------------------------------------------------------

    @staticmethod
    def check_client_servers(raw: list[dict[str, Any]], cwd: Path) -> list[McpServerConfig]:
        """``McpConfigError`` naming the bad entry of ``createSession {mcpServers}``."""
        try:
            return [client_server(r, cwd) for r in raw]
        except McpConfigError as exc:
            raise McpConfigError(f"mcpServers: {exc.message}") from None

    def set_client_servers(self, choices: McpChoices, raw: list[dict[str, Any]], cwd: Path) -> None:
        """``createSession {mcpServers}``: kept in the session's choices only (their env and headers may hold
        secrets)."""
        configs = self.check_client_servers(raw, cwd)
        if configs:
            choices.client_servers = configs

    def configs(self, choices: McpChoices, cwd: Path) -> tuple[list[McpServerConfig], list[str]]:
        """User servers, then the project's, then the client's; a later one of the same name wins."""
        project, problems = read_project_servers(cwd)
        by_name = {c.name: c for c in [*self.user_servers, *project, *choices.client_servers]}
        return [c for c in by_name.values() if c.enabled], problems

    def forget_session(self, session_id: str, choices: McpChoices) -> None:
        """The session is gone from this process: its servers stop unless another session uses them."""
        self.manager.release(session_id)
        choices.client_servers, choices.decided = [], {}

    # --- a turn's tools ------------------------------------------------------------------------------

    async def session_tools(
        self, store: Store, session_id: str, choices: McpChoices, cwd: Path, emit: Emitter, ask: Ask
    ) -> dict[str, Tool]:
        """Start the session's servers (asking before project ones) and return its MCP tools by model name."""
        frozen = await load_frozen(store, session_id)
        configs, problems = self.configs(choices, cwd)
        if frozen is not None:
            configs = [c for c in configs if c.name in frozen.servers]
        else:
            for problem in problems:
                emit(u.Notice(level="warning", message=problem))
        allowed = [
            c for c in configs if c.origin != "project" or await self._approved(session_id, choices, cwd, c, emit, ask)
        ]
        connections = self.manager.use(session_id, allowed)
        if frozen is None and not configs:
            return {}  # nothing configured: nothing to freeze (a server added later joins a later turn's freeze)
        if frozen is None:
            await asyncio.gather(*(c.wait_settled(c.config.startup_timeout_s + 2) for c in connections))
            frozen = _freeze(connections)
            await store.add_event(
                session_id,
                FROZEN_EVENT,
                {"servers": frozen.servers, "tools": [msgspec.to_builtins(t) for t in frozen.tools]},
                emit.turn_id,
            )
        return {t.name: self._tool(t) for t in frozen.tools}

    async def _approved(
        self, session_id: str, choices: McpChoices, cwd: Path, config: McpServerConfig, emit: Emitter, ask: Ask
    ) -> bool:
        """A project server starts only once the user allowed it (protocol/README.md ``requestApproval``)."""
        item = ProjectItem(
            project=cwd,
            name=config.name,
            key=config.key,
            tool_call_id=f"mcp_server_{config.name}",
            tool="mcpServer",
            title=f"Start MCP server {config.name!r} from .mcp.json?",
            detail=f'{config.approval_detail}\n\n["Allow always" covers this server, as configured now, in {cwd}]',
            refused=f"MCP server {config.name!r} from .mcp.json was not started (not approved)",
        )
        return await approve(self.trust, choices.decided, item, session_id, emit, ask)

    def _tool(self, frozen: FrozenTool) -> Tool:
        async def run(ctx: ToolContext, args: dict[str, Any]) -> str:
            from server.mcp.connection import McpCallFailed
            from server.mcp.results import result_text

            conn = self.manager.connection(ctx.session_id, frozen.server)
            if conn is None:
                raise ToolFailure(f"MCP server {frozen.server!r} is not available in this session")
            try:
                result = await conn.call(frozen.tool, args)
            except McpCallFailed as exc:
                raise ToolFailure(str(exc)) from None
            return result_text(result)

        return Tool(frozen.name, frozen.description, frozen.parameters, run, approval="command")

    # --- visibility ----------------------------------------------------------------------------------

    def revoke(self, cwd: Path, name: str) -> bool:
        """``revokeMcpServerApproval``: the project's server ``name`` asks again at its next session."""
        return self.trust.revoke(cwd, name)

    async def list(self, store: Store, session: tuple[str, McpChoices] | None, cwd: Path | None) -> list[McpServerInfo]:
        """With a session (its id and choices): its servers (starting the approved ones; once its tools are frozen,
        the servers they came from); without: every running or configured user-level one."""
        if session is not None and cwd is not None:
            session_id, choices = session
            configs, _ = self.configs(choices, cwd)
            frozen = await load_frozen(store, session_id)
            if frozen is not None:
                configs = [c for c in configs if c.name in frozen.servers]
            waiting = [
                c
                for c in configs
                if c.origin == "project"
                and not self.trust.allowed_key(cwd, c.name, c.key)
                and not choices.decided.get(c.key)
            ]
            running = self.manager.use(session_id, [c for c in configs if c not in waiting])
            return [*(_info(c) for c in running), *(_config_info(c, "needsApproval") for c in waiting)]
        running = self.manager.all()
        keys = {c.config.key for c in running}
        return [
            *(_info(c) for c in running),
            *(_config_info(c, "stopped") for c in self.user_servers if c.key not in keys),
        ]

    def _status(self, conn: McpConnection, sessions: Sequence[str]) -> None:
        tools = [model_tool_name(conn.config.name, t.name) for t in conn.tools] if conn.state == "ready" else None
        update = u.McpServerStatus(
            name=conn.config.name, state=conn.state, transport=conn.config.transport, reason=conn.reason, tools=tools
        )
        for sid in sessions:
            emit = Emitter(self._notify, sid, None)
            emit(update)
            if conn.state == "failed":
                emit(u.Notice(level="warning", message=f"MCP server {conn.config.name!r} failed: {conn.reason}"))
        if conn.state == "failed":
            log.warning("MCP server %s failed: %s", conn.config.name, conn.reason)

    async def close(self) -> None:
        await self.manager.close()


def _freeze(connections: list[McpConnection]) -> FrozenTools:
    frozen, taken = FrozenTools(), set()
    for conn in connections:
        if conn.state != "ready":
            continue
        frozen.servers.append(conn.config.name)
        for tool in conn.tools:
            name = model_tool_name(conn.config.name, tool.name)
            if name in taken:
                continue
            taken.add(name)
            description = (tool.description or tool.name) + f" (from MCP server {conn.config.name})"
            frozen.tools.append(
                FrozenTool(name, conn.config.name, tool.name, description, _object_schema(tool.input_schema))
            )
    return frozen


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Providers want an object schema; MCP requires one, but a server may still send ``{}``."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return {"type": "object", "properties": {}}
    return schema


def _info(conn: McpConnection) -> McpServerInfo:
    c = conn.config
    return McpServerInfo(
        name=c.name,
        origin=c.origin,
        transport=c.transport,
        state=conn.state,
        command_line=c.command_line,
        reason=conn.reason,
        restarts=conn.restarts,
        tools=[
            McpToolInfo(name=t.name, model_name=model_tool_name(c.name, t.name), description=t.description or None)
            for t in conn.tools
        ],
    )


def _config_info(c: McpServerConfig, state: str) -> McpServerInfo:
    return McpServerInfo(
        name=c.name,
        origin=c.origin,
        transport=c.transport,
        state=state,  # type: ignore[arg-type]
        command_line=c.command_line,
        tools=[],
    )
