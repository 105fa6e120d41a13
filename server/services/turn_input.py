"""A submitted turn's input, checked once: the wire's ``SubmitTurnParams`` become a ``SubmittedTurn``, and nothing
after this reads the params (``submitTurn`` and ACP's ``session/prompt`` alike).

Images are checked before anything is stored; a slash command is expanded, or a built-in answers it
(``server.services.commands``); recorded text is data, never a command (B-REC-1).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.messages import Image, SubmitTurnParams, SubmitTurnResult
from protocol.turns import ContextItem
from server.services.commands import CommandsNeeds, TurnText, turn_text
from server.services.images import check_images
from server.transcript import StoredSession


@dataclass(frozen=True)
class SubmittedTurn:
    text: str  # what the model sees: a command's expansion, else what was sent
    typed: str | None  # what the user typed, when ``text`` is a command's expansion
    images: list[Image] | None
    context: list[ContextItem]  # what the user points at, attached as the turn starts
    queue: bool  # run after the turns already there, else the session must be idle
    max_model_calls: int | None  # replaces the server's ``max_iterations``
    answered: SubmitTurnResult | None = None  # a built-in answered it: no turn runs


async def turn_input(core: CommandsNeeds, stored: StoredSession, params: SubmitTurnParams) -> SubmittedTurn:
    check_images(params.images or [])
    text = TurnText(params.text) if params.literal else await turn_text(core, stored, params.text)
    return SubmittedTurn(
        text.text,
        text.typed,
        params.images,
        params.context or [],
        params.queue,
        params.max_model_calls,
        text.answered,
    )
