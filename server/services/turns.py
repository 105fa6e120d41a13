"""The turn use cases: submit (with its input checks), steer and cancel a turn, and putting a turn together.

Every front end comes here (``submitTurn`` and ACP's ``session/prompt`` alike), so every one gets the same checks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from protocol import updates as u
from protocol.messages import SteerTurnResult, SubmitTurnParams, SubmitTurnResult, TurnError, TurnUsage
from server.agent.approvals import Approvals, approval_policy
from server.agent.batches import TASK_TOOL
from server.agent.loop import Turn
from server.agent.views import ViewBuilder, recall_server_window, tool_reserve_tokens
from server.checkpoints import Checkpointer
from server.emit import Emitter
from server.errors import InvalidParams
from server.grounding.attach import attach_context
from server.grounding.edits import EditWatch
from server.grounding.tools import editor_tools
from server.hooks.service import HookChoices, SessionHooks
from server.project.frozen import read_frozen_context
from server.providers import ChatProvider
from server.sandbox.mode import CommandSandbox, say_once, session_sandbox
from server.sandbox.policy import hidden_paths
from server.services.commands import CommandsNeeds, TurnText, turn_text
from server.services.images import check_images
from server.services.models import choose_model, view_settings
from server.services.needs import HasArtifacts, HasBlobs, HasMcp, HasProcesses, HasRecordedTools
from server.services.subagents import Child, SubagentsNeeds, task_tool
from server.sessions import Session
from server.tools import Tool, ToolContext
from server.tools.web.tools import search_tools
from server.transcript import NewMessage, StoredSession, new_id


class TurnsNeeds(
    CommandsNeeds, SubagentsNeeds, HasMcp, HasBlobs, HasArtifacts, HasProcesses, HasRecordedTools, Protocol
):
    """What the turn use cases use of the ``Core``: a turn reaches nearly all of it (a slash command runs the
    context use cases, a ``task`` call a subagent)."""


NO_PROVIDER = (
    "no model provider is configured: set THREADLINE_BASE_URL and THREADLINE_MODEL (and "
    "THREADLINE_API_KEY), config.toml, or initializationOptions.provider"
)


async def submit_turn(core: TurnsNeeds, params: SubmitTurnParams) -> SubmitTurnResult:
    """Run a turn to its end (``submitTurn``, ACP ``session/prompt``); images are checked before anything is
    stored. With ``queue`` it runs after the turns already there, else the session must be idle."""
    check_images(params.images or [])
    stored, session = await core.session(params.session_id)
    # A slash command's expansion or a built-in's answer; recorded text is data, never a command (B-REC-1).
    prepared = TurnText(params.text) if params.literal else await turn_text(core, stored, params.text)
    if prepared.answered is not None:
        return prepared.answered
    if not params.queue:
        session.turns.ensure_idle()
    provider = core.models.provider(core.settings, stored)
    turn_id = new_id("turn_")
    emit = Emitter(core.notify, session.id, turn_id)
    if provider is None:
        error = TurnError(code="noProvider", message=NO_PROVIDER)
        emit(u.Notice(level="error", message=NO_PROVIDER))
        emit(u.TurnCompleted(stop_reason="error", error=error))  # clients close a turn on this, as for any turn
        return SubmitTurnResult(turn_id=turn_id, stop_reason="error", usage=TurnUsage(), error=error)

    text = prepared.text  # the expansion of a slash command (what the model sees), else what was sent
    if core.recorded_tools is None and (params.context or "@" in text):  # a replay's text has its blocks already
        hidden, _ = hidden_paths(core.settings.sandbox.deny_read, Path(stored.cwd))  # as the tools (B-SBX-1)
        attached = await attach_context(
            Path(stored.cwd), session.id, core.artifacts, core.editor, text, params.context or [], hidden
        )
        text = attached.text
        for note in attached.notes:
            emit(u.Notice(level="warning", message=note))

    def cancelled() -> SubmitTurnResult:  # cancelled (or its session deleted) before it began: nothing was stored
        emit(u.TurnCompleted(stop_reason="cancelled"))
        return SubmitTurnResult(turn_id=turn_id, stop_reason="cancelled", usage=TurnUsage())

    async def build_and_run() -> SubmitTurnResult:
        try:
            current = await core.store.get_session(session.id)  # a queued turn starts from what the last one left
            turn = await build_turn(core, session, current, provider, turn_id, max_model_calls=params.max_model_calls)
        except asyncio.CancelledError:
            return cancelled()
        return await turn.run(text, params.images, prepared.typed)

    # Registered before it is built, so a deleteSession or cancelTurn arriving meanwhile finds it.
    return await session.turns.wait(
        session.turns.start(turn_id, build_and_run, queue=params.queue, cancelled=cancelled)
    )


async def steer_turn(core: TurnsNeeds, session_id: str, text: str) -> SteerTurnResult:
    """``steerTurn``: the text waits for the running turn's next model call (``Turn._take_steers``)."""
    if not text.strip():
        raise InvalidParams("text must not be empty")
    _, session = await core.session(session_id)
    return SteerTurnResult(turn_id=session.turns.steer(text))


async def cancel_turn(core: TurnsNeeds, session_id: str) -> bool:
    """Cancel the running turn (its ``submitTurn`` answers ``cancelled``); the turns queued after it still run."""
    _, session = await core.session(session_id)
    return session.turns.cancel()


def cancel_running_turn(core: TurnsNeeds, session_id: str) -> bool:
    """Cancel the session's running turn, if this process runs one (ACP's ``session/cancel``, a notification:
    nothing to answer, so the session is not looked up)."""
    session = core.sessions.peek(session_id)  # a session whose turn runs is always held
    return session is not None and session.turns.cancel()


async def build_turn(
    core: TurnsNeeds,
    session: Session,
    stored: StoredSession,
    provider: ChatProvider,
    turn_id: str | None = None,
    child: Child | None = None,
    max_model_calls: int | None = None,
) -> Turn:
    """A session's turn; with ``child``, a subagent's (B-SUB-1): no ``task`` tool, its ids on every update and
    approval, its instructions after the frozen context, its usage told to the parent. ``max_model_calls``
    (``submitTurn``'s) replaces the server's ``max_iterations``."""
    cwd = Path(stored.cwd)

    async def build_child(
        handle: Session, child_stored: StoredSession, child_provider: ChatProvider, child_turn: str, of: Child
    ) -> Turn:
        return await build_turn(core, handle, child_stored, child_provider, child_turn, of)

    frozen = read_frozen_context(cwd, core.settings.home) if stored.message_count == 0 else None
    turn_id = turn_id or new_id("turn_")
    emit = Emitter(core.notify, session.id, turn_id, parent=child.parent if child else None)
    sandbox = await session_sandbox(core.store, core.settings.sandbox, session.id, cwd)  # B-SBX-1: read once a turn
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
        edit_watch=EditWatch(core.editor) if core.editor and core.recorded_tools is None else None,
        allowed=child.tools if child else None,
        sandbox=sandbox,
        background=session.processes,
    )

    async def first_messages() -> list[NewMessage]:
        if notice := await say_once(core.store, sandbox, session.id, turn_id):  # B-SBX-2: said once per session
            emit(u.Notice(level="warning", message=notice))
        if frozen is None:
            return []
        for notice in frozen.notices:
            emit(u.Notice(level="warning", message=notice))
            await core.store.add_event(session.id, "notice", {"level": "warning", "message": notice}, turn_id)
        return [NewMessage("system", text) for text in [*frozen.messages, *(child.instructions if child else [])]]

    await recall_server_window(core.store, stored.id, core.server_windows)
    views = ViewBuilder(
        core.store,
        view_settings(core.settings, stored),
        provider.model,
        core.calibrations,
        overhead_tokens=tool_reserve_tokens([t.spec() for t in tools.session_tools.values()]),
        server_windows=core.server_windows,
        state=session.view,
        sent=session.sent,
    )
    policy = approval_policy(stored.approval_policy, core.settings.approval_policy)
    approvals = Approvals(
        core.store,
        core.ask_client,
        policy,
        await session.approvals(),
        cwd,
        core.settings.home,
        sandbox,
        core.settings.approval_rules,
        core.settings.unattended,
        core.settings.web,
    )
    approvals.parent = child.parent if child else None
    return Turn(
        store=core.store,
        provider=provider,
        tools=tools,
        approvals=approvals,
        emit=emit,
        views=views,
        max_iterations=max_model_calls or core.settings.max_iterations,
        totals=await session.totals(),
        price=core.models.price(core.settings, stored),
        first_messages=first_messages,
        turn_id=turn_id,
        take_steers=session.turns.take_steers,
        on_usage=child.on_usage if child else None,
        new_session=stored.message_count == 0 and child is None,  # a subagent is no new session: no SessionStart
        # a subagent's project hooks follow its parent's approval (one question per session, not per child)
        **_live_or_recorded(
            core, session, cwd, turn_id, core.sessions.get(child.parent[0]).hooks if child else None, sandbox
        ),
    )


def _live_or_recorded(
    core: TurnsNeeds,
    session: Session,
    cwd: Path,
    turn_id: str,
    hook_choices: HookChoices | None = None,
    sandbox: CommandSandbox | None = None,
) -> dict[str, Any]:
    """A replay's runner hands back recorded results: nothing is written (no checkpoints), no MCP server starts, no
    hook runs, and its one provider answers every call (the model is not chosen again)."""
    if core.recorded_tools is not None:
        return {"run_tool": core.recorded_tools}

    async def session_tools(turn_emit: Emitter) -> dict[str, Tool]:
        # Unattended, a project's MCP server is not asked about: it stays stopped (a notice says so)
        ask = _nobody_to_ask if core.settings.unattended else core.ask_client
        return await core.mcp.session_tools(core.store, session.id, session.mcp, cwd, turn_emit, ask)

    async def load_hooks(turn_emit: Emitter) -> SessionHooks:
        # Unattended (``threadline exec``) nobody is asked: an unapproved project hook file does not run
        choices = hook_choices or session.hooks
        return await core.hooks.for_turn(
            choices,
            cwd,
            turn_emit,
            core.ask_client,
            core.store,
            core.settings.api_keys(),
            core.settings.unattended,
            sandbox,  # hooks run under the session's sandbox (B-HOOK-2)
            core.processes,
        )

    return {
        "checkpoints": Checkpointer(
            core.store,
            core.blobs,
            session.id,
            turn_id,
            cwd,
            core.settings.checkpoint_max_file_bytes,
            core.settings.checkpoint_max_session_bytes,
        ),
        "choose_model": lambda: choose_model(core, session.id),
        "session_tools": session_tools,
        "load_hooks": load_hooks,
    }


async def _nobody_to_ask(method: str, params: Any) -> Any:
    raise RuntimeError("unattended run: nobody can answer")
