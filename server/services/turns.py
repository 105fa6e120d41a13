"""The turn use cases: submit (with its input checks), steer and cancel a turn; a turn is put together in
``server.services.turn_factory``.

Every front end comes here (``submitTurn`` and ACP's ``session/prompt`` alike), so every one gets the same checks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from protocol import updates as u
from protocol.messages import SteerTurnResult, SubmitTurnParams, SubmitTurnResult, TurnError, TurnUsage
from protocol.turns import ContextItem
from server.emit import Emitter
from server.errors import InvalidParams
from server.grounding.attach import attach_context
from server.sandbox.policy import hidden_paths
from server.services import worktrees
from server.services.turn_factory import TurnsNeeds, TurnSpec, build_turn
from server.services.turn_input import turn_input
from server.transcript import StoredSession, new_id

NO_PROVIDER = (
    "no model provider is configured: set THREADLINE_BASE_URL and THREADLINE_MODEL (and "
    "THREADLINE_API_KEY), config.toml, or initializationOptions.provider"
)


async def submit_turn(core: TurnsNeeds, params: SubmitTurnParams) -> SubmitTurnResult:
    """Run a turn to its end (``submitTurn``, ACP ``session/prompt``). With ``queue`` it runs after the turns
    already there, else the session must be idle."""
    stored, session = await core.session(params.session_id)
    given = await turn_input(core, stored, params)  # checked; a built-in's answer, or what the turn runs on
    if given.answered is not None:
        return given.answered
    provider = core.models.provider(core.settings, stored)
    turn_id = new_id("turn_")
    emit = Emitter(core.notify, session.id, turn_id)
    if provider is None:
        error = TurnError(code="noProvider", message=NO_PROVIDER)
        emit(u.Notice(level="error", message=NO_PROVIDER))
        emit(u.TurnCompleted(stop_reason="error", error=error))  # clients close a turn on this, as for any turn
        return SubmitTurnResult(turn_id=turn_id, stop_reason="error", usage=TurnUsage(), error=error)

    def cancelled() -> SubmitTurnResult:  # cancelled (or its session deleted) before it began: nothing was stored
        emit(u.TurnCompleted(stop_reason="cancelled"))
        return SubmitTurnResult(turn_id=turn_id, stop_reason="cancelled", usage=TurnUsage())

    async def build_and_run() -> SubmitTurnResult:
        try:
            # what the user points at is read as the turn starts (a queued turn's, after the turns ahead of it)
            text = await _attached(core, stored, emit, given.text, given.context)
            current = await core.store.get_session(session.id)  # a queued turn starts from what the last one left
            spec = TurnSpec(session, current, provider, turn_id, max_model_calls=given.max_model_calls)
            turn = await build_turn(core, spec)
            worktree = await worktrees.of_session(core, session.id)
        except asyncio.CancelledError:
            return cancelled()
        result = await turn.run(text, given.images, given.typed)
        await worktrees.after_turn(worktree)  # B-WT-1: the turn's commits onto the session's branch
        return result

    # Registered before it is built (refused if the session is busy), so a deleteSession or cancelTurn arriving
    # meanwhile finds it.
    return await session.turns.wait(session.turns.start(turn_id, build_and_run, queue=given.queue, cancelled=cancelled))


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


def cancel_running_turn(core: TurnsNeeds, session_id: str, queued: bool = False) -> bool:
    """Cancel the session's running turn, if this process runs one (ACP's ``session/cancel``, a notification:
    nothing to answer, so the session is not looked up); with ``queued``, the turns queued behind it too."""
    session = core.sessions.peek(session_id)  # a session whose turn runs is always held
    if session is None:
        return False
    return session.turns.cancel_with_queued() if queued else session.turns.cancel()


async def _attached(
    core: TurnsNeeds, stored: StoredSession, emit: Emitter, text: str, context: list[ContextItem]
) -> str:
    """``text`` with the context the user points at (``context``, ``@path`` mentions) as blocks; a replay's
    text has its blocks already."""
    if core.recorded_tools is not None or not (context or "@" in text):
        return text
    cwd = Path(stored.cwd)
    hidden, _ = hidden_paths(core.settings.sandbox.deny_read, cwd)  # as the tools (B-SBX-1)
    attached = await attach_context(cwd, stored.id, core.artifacts, core.editor, text, context, hidden)
    for note in attached.notes:
        emit(u.Notice(level="warning", message=note))
    return attached.text
