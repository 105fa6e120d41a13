"""The slash-command use cases: listing them, and what a ``/name`` at the start of a turn's text does.

A file command is expanded here, for every front end (``submitTurn`` and ACP's ``session/prompt``), and the turn
runs on the expansion; the built-ins are answered without a model call: ``/compact [focus]`` compacts now,
``/context`` reports what fills the context (``getContextView``), ``/plan`` switches the session to plan mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import msgspec

from protocol.messages import (
    CommandInfo,
    CommandOutcome,
    GetContextViewParams,
    SubmitTurnResult,
    TranscriptItem,
    TurnUsage,
)
from server.agent.loop import COMMAND_EVENT
from server.project.commands import Command, expand, invocation, load_commands, resolve
from server.project.workspace import checked_folder
from server.services.context_view import ContextNeeds, compact_session, context_report, get_context_view
from server.services.sessions import update_session
from server.transcript import StoredSession, new_id


class CommandsNeeds(ContextNeeds, Protocol):
    """What the command use cases use of the ``Core``: the built-ins run the context use cases (``/compact``,
    ``/context``) and ``update_session`` (``/plan``), so their needs."""


async def list_commands(core: CommandsNeeds, session_id: str | None, cwd: str | None) -> list[CommandInfo]:
    """A session's commands (its folder's), else a folder's, else the user's and the built-ins."""
    folder = Path((await core.store.get_session(session_id)).cwd) if session_id else None
    if folder is None and cwd:
        folder = checked_folder(cwd)
    return [info(c) for c in sorted(load_commands(folder, core.settings.home).values(), key=lambda c: c.name)]


def info(command: Command) -> CommandInfo:
    return CommandInfo(
        name=command.name, description=command.description, source=command.source, argument_hint=command.argument_hint
    )


@dataclass(frozen=True)
class TurnText:
    """What a turn runs on: ``text`` for the model; ``typed`` what the user typed, when it was a command."""

    text: str
    typed: str | None = None
    answered: SubmitTurnResult | None = None  # a built-in answered it: no turn runs


async def turn_text(core: CommandsNeeds, stored: StoredSession, text: str) -> TurnText:
    """``text`` as the turn runs it: unchanged, a command's expansion, or a built-in's answer (``UnknownCommand``
    for a ``/name`` no command has)."""
    called = invocation(text)
    if called is None:
        return TurnText(text)
    name, arguments = called
    command = resolve(load_commands(Path(stored.cwd), core.settings.home), name)
    if command.source != "builtin":
        return TurnText(expand(command, arguments), typed=text)
    if name == "plan":
        await update_session(core, stored.id, approval_policy="plan")
        note = (
            "Plan mode is on: the agent reads and plans; edits, commands and MCP tools are refused. Leave it by "
            "switching the approval policy back (updateSession approvalPolicy, or the editor's mode)."
        )
        if arguments:  # "/plan TASK": plan mode, then the task as a turn
            return TurnText(arguments)
        return TurnText(text, answered=_answered(name, note))
    if name == "compact":  # exclusive, as compactSession is declared in the method table
        _, session = await core.session(stored.id)
        with session.turns.exclusive("/compact"):
            done = await compact_session(core, stored.id, arguments or None)
        output = (
            f"Compacted: about {done.before_tokens} -> {done.after_tokens} tokens ({done.mode})."
            if done.compacted
            else "Nothing to compact: the conversation is no longer than its recent tail."
        )
        return TurnText(text, answered=_answered(name, output))
    view = await get_context_view(core, GetContextViewParams(session_id=stored.id))
    return TurnText(text, answered=_answered(name, context_report(view)))


def _answered(name: str, output: str) -> SubmitTurnResult:
    return SubmitTurnResult(
        turn_id=new_id("turn_"), stop_reason="endTurn", usage=TurnUsage(), command=CommandOutcome(name, output)
    )


async def with_typed(core: CommandsNeeds, session_id: str, items: list[TranscriptItem]) -> list[TranscriptItem]:
    """``items`` with ``typed`` set on the user messages that are a command's expansion (its commandExpanded
    event), so a resumed client shows what the user typed."""
    if not any(item.role == "user" for item in items):
        return items
    typed = {
        event.payload.get("seq"): event.payload.get("typed")
        for event in await core.store.list_events(session_id, COMMAND_EVENT)
    }
    return [
        msgspec.structs.replace(item, typed=typed[item.seq])
        if item.role == "user" and isinstance(typed.get(item.seq), str)
        else item
        for item in items
    ]
