"""An answer cut at the output limit: never silent, never half-run.

Every provider kind says it the same way once parsed: Chat Completions' ``finish_reason: "length"``, Anthropic's
``stop_reason: "max_tokens"`` and Responses' ``incomplete`` with ``max_output_tokens`` are all ``length`` in a
``ChatResult``. What follows from it is decided here, purely: which calls were being written when the answer
stopped (their arguments are not a whole JSON object, so they are never run), what the model is told so it can go
on, and what the user is told.
"""

from __future__ import annotations

import json

from protocol import updates as u
from protocol.messages import OpenAIToolCall, TurnError
from server.emit import Emitter
from server.providers import ChatResult
from server.transcript import NewMessage, Store

CUT = "length"
# An answer cut more often than this in one turn (its text, or a call it was still writing) ends the turn as a
# failure: runaway output.
MAX_CONTINUATIONS = 2
OUTPUT_LIMIT = "outputLimit"  # the TurnError code of such a turn

CUT_CALL_RESULT = (
    "Tool call not run: your answer was cut off at the output limit while this call's arguments were being "
    "written, so they are incomplete. Make the call again; split a large write into smaller edits so it fits."
)
CONTINUE_NOTE = (
    "[Your previous answer was cut off at the output limit. Continue exactly where it stopped, without repeating "
    "what you already wrote.]"
)


def was_cut(result: ChatResult) -> bool:
    return result.finish_reason == CUT


def incomplete_calls(calls: list[OpenAIToolCall]) -> set[str]:
    """The calls of a cut answer whose arguments stopped mid-way: anything but a whole JSON object."""
    return {c.id for c in calls if not _whole_object(c.function.arguments)}


def _whole_object(raw: str) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def cut_notice(skipped: int | None, continuing: bool) -> str:
    """What the user is told about a cut answer (``skipped``: how many of its tool calls were unfinished; None for
    an answer without calls)."""
    text = "the model's answer was cut off at its output limit (max_output_tokens or the server's own)"
    if skipped:
        text += f"; {skipped} tool call(s) it was still writing were not run, and the model was told"
    elif skipped == 0:
        text += "; its tool calls were whole, and run"
    elif continuing:
        text += "; the model was asked to continue"
    if not continuing:
        text += (
            f"; cut {MAX_CONTINUATIONS + 1} times in this turn, so the turn ends here as failed: raise "
            "max_output_tokens, or ask for less at once"
        )
    return text


def runaway(cuts: int) -> TurnError:
    """The failure of a turn whose answers were cut at the output limit more than ``MAX_CONTINUATIONS`` times."""
    return TurnError(
        code=OUTPUT_LIMIT,
        message=(
            f"the model's answer was cut off at the output limit {cuts} times in this turn (max_output_tokens or the "
            "server's own limit): raise max_output_tokens, or ask for less at once"
        ),
    )


def not_smaller(tokens: int) -> str:
    """R-PTL-1's retry when the fallback view is no smaller than what it replaces: said as what it is."""
    return (
        "the provider refused the request as too long; it is sent once more with only the latest messages "
        f"({tokens:,} tokens), which is no smaller: the conversation is already short, so the server's own limit "
        "(or its other sessions) leaves too little room"
    )


async def after_cut_text(store: Store, emit: Emitter, session_id: str, turn_id: str, cuts: int) -> bool:
    """A text answer was cut (the ``cuts``-th time this turn): tell the user, and, up to ``MAX_CONTINUATIONS``,
    store a note asking the model to go on (True: the turn makes another model call)."""
    going_on = cuts <= MAX_CONTINUATIONS
    notice = cut_notice(None, going_on)
    emit(u.Notice(level="warning", message=notice))
    await store.add_event(session_id, "notice", {"level": "warning", "message": notice}, turn_id)
    if going_on:
        stored = await store.append_messages(session_id, [NewMessage("user", CONTINUE_NOTE)], turn_id)
        emit(u.UserMessage(text=CONTINUE_NOTE), seq=stored[0].seq)
    return going_on


async def after_cut_calls(store: Store, emit: Emitter, session_id: str, turn_id: str, skipped: int, cuts: int) -> None:
    """A cut answer with tool calls: the whole ones run, the user hears of the cut (the unfinished ones are
    answered with ``CUT_CALL_RESULT`` when their turn comes, which tells the model); past ``MAX_CONTINUATIONS``
    cuts the turn then ends."""
    notice = cut_notice(skipped, cuts <= MAX_CONTINUATIONS)
    emit(u.Notice(level="warning", message=notice))
    await store.add_event(session_id, "notice", {"level": "warning", "message": notice}, turn_id)
