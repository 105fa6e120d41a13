"""Where a turn is put together: ``build_turn`` wires the loop's collaborators from the ``Core`` (the composition
root, ``server.services.core``), and ``SessionPorts`` is what the running turn asks of its session
(``server.agent.ports.TurnPorts``). Every turn is built here: ``submitTurn``'s, ACP's ``session/prompt``'s and a
subagent's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from protocol import updates as u
from server.agent.approvals import Approvals, approval_policy
from server.agent.batches import TASK_TOOL
from server.agent.loop import Turn
from server.agent.ports import ModelChoice
from server.agent.views import ViewBuilder, recall_server_window, reserve_tokens
from server.checkpoints import Checkpointer
from server.emit import Emitter
from server.grounding.edits import EditWatch
from server.grounding.tools import editor_tools
from server.hooks.service import HookChoices, SessionHooks
from server.project.frozen import FrozenContext, read_frozen_context
from server.providers import ChatProvider, drops_tools
from server.sandbox.mode import CommandSandbox, say_once
from server.services.commands import CommandsNeeds
from server.services.models import choose_model, view_settings
from server.services.needs import CoreExtensions, CoreFiles
from server.services.subagents import Child, SubagentsNeeds, task_tool
from server.sessions import Session
from server.tools import Tool, ToolContext, available_tools, run_tool
from server.tools.web.tools import search_tools
from server.transcript import NewMessage, StoredSession
from server.worktrees.confined import session_sandbox


class TurnsNeeds(CommandsNeeds, SubagentsNeeds, CoreExtensions, CoreFiles, Protocol):
    """What the turn use cases use of the ``Core``: a turn reaches nearly all of it (a slash command runs the
    context use cases, a ``task`` call a subagent)."""


@dataclass(frozen=True)
class TurnSpec:
    """Which turn to build: the session (its handle and what is stored of it now) and the provider of its first
    call; ``child`` makes it a subagent's (B-SUB-1); ``max_model_calls`` replaces the server's ``max_iterations``."""

    session: Session
    stored: StoredSession
    provider: ChatProvider
    turn_id: str
    child: Child | None = None
    max_model_calls: int | None = None


async def build_turn(core: TurnsNeeds, spec: TurnSpec) -> Turn:
    """A session's turn; a subagent's has no ``task`` tool, its ids on every update and approval, its instructions
    after the frozen context, and its usage told to the parent."""
    session, stored, child, turn_id = spec.session, spec.stored, spec.child, spec.turn_id
    cwd = Path(stored.cwd)
    frozen = read_frozen_context(cwd, core.settings.home) if stored.message_count == 0 else None
    emit = Emitter(core.notify, session.id, turn_id, parent=child.parent if child else None)
    sandbox = await session_sandbox(core.store, core.settings.sandbox, session.id, cwd)  # B-SBX-1: read once a turn
    recorded = core.recorded_tools is not None

    async def build_child(
        handle: Session, child_stored: StoredSession, provider: ChatProvider, child_turn: str, of: Child
    ) -> Turn:
        return await build_turn(core, TurnSpec(handle, child_stored, provider, child_turn, of))

    tools = ToolContext(
        session.id,
        turn_id,
        cwd,
        core.settings.tool_settings(),
        core.store,
        core.artifacts,
        core.settings.api_keys(),
        tuple(frozen.skill_roots) if frozen else (),
        core.processes,
        session_tools={
            **search_tools(core.settings.web),  # web_search, when a provider is configured
            **(editor_tools(core.editor) if core.editor else {}),
            **({} if child else {TASK_TOOL: task_tool(core, session, cwd, build_child)}),
        },
        edit_watch=EditWatch(core.editor) if core.editor and not recorded else None,
        allowed=child.tools if child else None,
        sandbox=sandbox,
        background=session.processes,
    )
    await recall_server_window(core.store, stored.id, core.server_windows)
    views = ViewBuilder(
        core.store,
        view_settings(core.settings, stored),
        spec.provider.model,
        core.calibrations,
        # what is sent; a server whose chat template drops the tools holds no room for them (llama.cpp /props)
        overhead_tokens=0
        if drops_tools(spec.provider)
        else reserve_tokens([t.spec() for t in available_tools(tools).values()]),
        server_windows=core.server_windows,
        state=session.view,
        sent=session.sent,
    )
    approvals = Approvals(
        core.store,
        core.ask_client,
        approval_policy(stored.approval_policy, core.settings.approval_policy),
        await session.approvals(),
        cwd,
        core.settings.home,
        sandbox,
        core.settings.approval_rules,
        core.settings.unattended,
        core.settings.web,
    )
    approvals.parent = child.parent if child else None
    ports = SessionPorts(core, session, cwd, turn_id, frozen, sandbox, child)
    return Turn(
        store=core.store,
        provider=spec.provider,
        tools=tools,
        approvals=approvals,
        emit=emit,
        views=views,
        max_iterations=spec.max_model_calls or core.settings.max_iterations,
        totals=await session.totals(),
        ports=ports,
        # A replay's runner hands back recorded results: nothing is written, so nothing is checkpointed
        run_tool=core.recorded_tools or run_tool,
        price=core.models.price(core.settings, stored),
        turn_id=turn_id,
        checkpoints=None if recorded else ports.checkpointer(),
        new_session=stored.message_count == 0 and child is None,  # a subagent is no new session: no SessionStart
    )


class SessionPorts:
    """What a session's running turn asks of the ``Core`` (``TurnPorts``). A replay (``core.recorded_tools``)
    starts no MCP server, runs no hook and keeps its one provider: the model is not chosen again."""

    def __init__(
        self,
        core: TurnsNeeds,
        session: Session,
        cwd: Path,
        turn_id: str,
        frozen: FrozenContext | None,
        sandbox: CommandSandbox,
        child: Child | None,
    ) -> None:
        self._core, self._session, self._cwd, self._turn_id = core, session, cwd, turn_id
        self._frozen, self._sandbox, self._child = frozen, sandbox, child
        self._live = core.recorded_tools is None

    def checkpointer(self) -> Checkpointer:
        core = self._core
        return Checkpointer(
            core.store,
            core.blobs,
            self._session.id,
            self._turn_id,
            self._cwd,
            core.settings.checkpoint_max_file_bytes,
            core.settings.checkpoint_max_session_bytes,
        )

    async def first_messages(self, emit: Emitter) -> list[NewMessage]:
        core, session_id = self._core, self._session.id
        if notice := await say_once(core.store, self._sandbox, session_id, self._turn_id):  # B-SBX-2: said once
            emit(u.Notice(level="warning", message=notice))
        if self._frozen is None:
            return []
        for notice in self._frozen.notices:
            emit(u.Notice(level="warning", message=notice))
            await core.store.add_event(session_id, "notice", {"level": "warning", "message": notice}, self._turn_id)
        instructions = self._child.instructions if self._child else []
        return [NewMessage("system", text) for text in [*self._frozen.messages, *instructions]]

    async def session_tools(self, emit: Emitter) -> dict[str, Tool]:
        if not self._live:
            return {}
        core, session = self._core, self._session
        # Unattended, a project's MCP server is not asked about: it stays stopped (a notice says so)
        ask = _nobody_to_ask if core.settings.unattended else core.ask_client
        return await core.mcp.session_tools(core.store, session.id, session.mcp, self._cwd, emit, ask)

    async def hooks(self, emit: Emitter) -> SessionHooks | None:
        if not self._live:
            return None
        core = self._core
        # a subagent's project hooks follow its parent's approval (one question per session, not per child)
        choices: HookChoices = core.sessions.get(self._child.parent[0]).hooks if self._child else self._session.hooks
        # Unattended (``threadline exec``) nobody is asked: an unapproved project hook file does not run
        return await core.hooks.for_turn(
            choices,
            self._cwd,
            emit,
            core.ask_client,
            core.store,
            core.settings.api_keys(),
            core.settings.unattended,
            self._sandbox,  # hooks run under the session's sandbox (B-HOOK-2)
            core.processes,
        )

    async def choose_model(self) -> ModelChoice | None:
        return await choose_model(self._core, self._session.id) if self._live else None

    def take_steers(self, last: bool) -> list[str]:
        return self._session.turns.take_steers(last)

    async def count_usage(self, event: dict[str, Any]) -> None:
        if self._child is not None:
            await self._child.on_usage(event)


async def _nobody_to_ask(method: str, params: Any) -> Any:
    raise RuntimeError("unattended run: nobody can answer")
