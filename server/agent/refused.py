"""A model call refused as too long (R-PTL-1), and a model server that was full rather than too small.

llama-server's slots share one KV cache by default: two sessions whose requests together pass ``-c`` make it
answer HTTP 500 "Context size has been exceeded." to every request it was processing. That says nothing about
the window: the limit is what the *other* sessions hold, and it moves. So after such a refusal (``server_full``):

- the retry is at most half the refused request (tool definitions included), whatever ``/props`` says or whether
  it answers at all, and waits a short, jittered back-off first, so two sessions refused at once do not collide
  again in step;
- the turn keeps its later calls at or under the size that worked (``ServerRoom``), relaxing a quarter at a time,
  and only after a call succeeds: the next call never goes back to the full view and collides again;
- while it stays full the retry is tried again, a bounded number of times (``FULL_RETRIES``), each smaller and
  after a longer back-off; a request refused for its own size (a stated window) keeps R-PTL-1's single retry.

The view kept within the room is R-FALL-1's window, shortened to fit (``clip_to_budget``), with the turn's request
put back when its last messages no longer hold it; its note to the model says what happened (the server was
full, or refused the request's size), not "compaction failed".
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, replace
from typing import Protocol

from protocol import updates as u
from protocol.wire_text import SUMMARY_MARKER
from server.agent import cut
from server.agent.partial import PartialAnswer
from server.agent.views import ViewBuilder
from server.context import FALLBACK_SUMMARY, RequestView, estimate_messages_tokens
from server.context.clip import clip_to_budget
from server.emit import Emitter
from server.providers import ChatResult, ProviderError

FULL_RETRIES = 3  # retries of one call while the server stays full (a refusal for size: R-PTL-1's one)
BACKOFF_SECONDS = 0.5  # the first retry waits 0.25-0.75 s, the next ones a multiple of it
MIN_ROOM_TOKENS = 256  # a request is never planned smaller than this (the retry's messages, tools aside)
SERVER_FULL_NOTE = (
    f"{SUMMARY_MARKER}\n"
    "Older conversation history was left out of this request because the model server was full (other requests "
    "held its memory). Only the most recent messages are shown. The full transcript is kept: use "
    "search_transcript to recover earlier goals, file paths, failures and decisions."
)
REFUSED_NOTE = (
    f"{SUMMARY_MARKER}\n"
    "Older conversation history was left out of this request because the model server refused the whole "
    "conversation as longer than its context. Only the most recent messages are shown. The full transcript is "
    "kept: use search_transcript to recover earlier goals, file paths, failures and decisions."
)


class TurnFailed(Exception):
    """The turn ends as failed with this code and message (the loop's ``TurnFailed`` is this one)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class ServerRoom:
    """How large a request the model server had room for in this turn, after it said it was full: ``cap`` (in
    the view's estimate, tool definitions included); None: no limit but the window."""

    cap: int | None = None
    task: str | None = None  # the turn's request: a view kept within the room that lost it gets it back
    _settled: bool = True  # False from a refusal to the next success: that success sets the cap

    def over(self, size: int) -> bool:
        return self.cap is not None and size > self.cap

    def refused(self, size: int) -> int:
        """A request of ``size`` was refused as the server was full: the size the retry is kept to (half)."""
        self.cap = max(min(size, self.cap or size) // 2, MIN_ROOM_TOKENS)
        self._settled = False
        return self.cap

    def succeeded(self, size: int) -> None:
        """A request of ``size`` was answered: the first success after a refusal is the size that worked; each
        later one relaxes the cap by a quarter."""
        if self.cap is None:
            return
        if not self._settled:
            self.cap, self._settled = max(size, MIN_ROOM_TOKENS), True
        else:
            self.cap += max(self.cap // 4, MIN_ROOM_TOKENS)


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based) on a full server: short, and jittered so that two
    sessions refused by the same collision do not come back together."""
    return BACKOFF_SECONDS * attempt * random.uniform(0.5, 1.5)


def within(view: RequestView, budget: int | None, note: str, task: str | None = None) -> RequestView:
    """The fallback ``view`` with ``note`` as its note to the model and, given a ``budget`` (tokens of messages),
    its largest conversation messages shortened to fit it. ``task``: the turn's request, put back after the note
    when the view's last messages no longer hold a user message (a turn of three calls has pushed it out)."""
    messages = [
        dict(m, content=note) if m.get("role") == "system" and m.get("content") == FALLBACK_SUMMARY else m
        for m in view.messages
    ]
    if task and not any(m.get("role") == "user" for m in messages):
        at = next((i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
        messages.insert(at, {"role": "user", "content": task})
    clipped = view.clipped_messages
    if budget is not None and estimate_messages_tokens(messages) > budget:
        messages, clipped = clip_to_budget(messages, max(budget, MIN_ROOM_TOKENS))
    summary = note if view.summary == FALLBACK_SUMMARY else view.summary
    return replace(
        view,
        messages=messages,
        estimated_tokens=estimate_messages_tokens(messages),
        summary=summary,
        clipped_messages=clipped,
    )


def server_full_notice(tokens: int, wait: float) -> str:
    return (
        "the model server is full (its slots share one cache, and other requests hold it): the request is sent "
        f"again in {wait:.1f} s with only the latest messages ({tokens:,} tokens, tool definitions included), and "
        "the rest of this turn stays that small until the server has room"
    )


class RefusedTurn(Protocol):
    """What the refusal path needs of its turn (``server.agent.loop.Turn``)."""

    views: ViewBuilder
    emit: Emitter
    room: ServerRoom

    @property
    def session_id(self) -> str: ...

    @property
    def answer(self) -> PartialAnswer: ...

    async def announce(self, view: RequestView, force: bool = False) -> bool: ...

    async def stream(self, view: RequestView) -> ChatResult: ...


def size(turn: RefusedTurn, view: RequestView) -> int:
    """What a request of ``view`` holds on the server: its messages and the tool definitions sent with them."""
    return view.estimated_tokens + turn.views.overhead_tokens


async def within_room(turn: RefusedTurn, view: RequestView) -> RequestView:
    """The view to send now: ``view``, unless a full server had room for less in this turn, then the fallback
    kept within that room (announced once a turn, as a fallback is)."""
    if turn.room.cap is None or not turn.room.over(size(turn, view)):
        return view
    budget = turn.room.cap - turn.views.overhead_tokens
    kept = within(await turn.views.fallback_view(turn.session_id), budget, SERVER_FULL_NOTE, turn.room.task)
    if kept.estimated_tokens < view.estimated_tokens:
        await turn.announce(kept)
        return kept
    return view


async def learn_window(turn: RefusedTurn, view: RequestView, exc: ProviderError) -> None:
    """What a refusal says of the server: its window (from its answer, or llama-server's ``/props``), and how it
    counted the refused prompt (B-TOK-3), so the retry and what follows are planned with them."""
    stated, refused = exc.context_window, exc.prompt_tokens
    said = "as its /props says" if exc.window_from == "props" else "as its answer says"
    if stated and (notice := await turn.views.observe_server_window(turn.session_id, stated, refused, said)):
        turn.emit(u.Notice(level="warning", message=notice))
    if refused:
        await turn.views.observe_refusal(view.estimated_tokens, refused)


async def retry(turn: RefusedTurn, view: RequestView, exc: ProviderError) -> ChatResult:
    """R-PTL-1: the refused call again with the fallback view; a full server (``server_full``) is asked again
    after a back-off, each time smaller, up to ``FULL_RETRIES`` times. A failure after that ends the turn."""
    attempt = 1
    while True:
        sent = await _retry_view(turn, view, exc, attempt)
        try:
            return await turn.stream(sent)
        except ProviderError as again:
            if again.kind == "context_too_long" and again.server_full and exc.server_full and attempt < FULL_RETRIES:
                view, exc, attempt = sent, again, attempt + 1
                continue
            await turn.answer.keep(again)
            if again.kind == "context_too_long" and again.server_full:
                raise TurnFailed(
                    "contextTooLong",
                    f"the model server stayed full after {attempt} smaller retries (other requests hold its shared "
                    f"cache; see docs/LOCAL_MODELS.md): {again.message}",
                ) from None
            if again.kind == "context_too_long":
                raise TurnFailed(
                    "contextTooLong",
                    "the provider still rejects the request as too long after falling back to the last messages: "
                    f"{again.message}",
                ) from None
            raise TurnFailed(again.kind, again.message) from None


async def _retry_view(turn: RefusedTurn, view: RequestView, exc: ProviderError, attempt: int) -> RequestView:
    fallback = await turn.views.fallback_view(turn.session_id)
    if exc.server_full:
        room = turn.room.refused(size(turn, view))
        fallback = within(fallback, room - turn.views.overhead_tokens, SERVER_FULL_NOTE, turn.room.task)
    else:
        fallback = within(fallback, None, REFUSED_NOTE)
    if attempt == 1 and fallback.estimated_tokens < fallback.before_tokens:
        turn.emit(u.ContextCompacting(trigger="promptTooLong", before_tokens=view.before_tokens))
        await turn.announce(fallback, force=True)
    elif attempt == 1 and not exc.server_full:  # a view that does not shrink is no compaction, nor said as one
        turn.emit(u.Notice(level="warning", message=cut.not_smaller(size(turn, fallback))))
    if exc.server_full:
        wait = backoff(attempt)
        turn.emit(u.Notice(level="warning", message=server_full_notice(size(turn, fallback), wait)))
        await asyncio.sleep(wait)
    return fallback
