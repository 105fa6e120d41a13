"""The answer being streamed: its text and reasoning so far, kept as a draft while it streams and stored as
``interrupted`` when the call fails or the turn is cancelled, so a crash or a cancel loses little of it; once the
call has finished, its usage figures until they are stored with the answer (one transaction)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable
from typing import Any

from protocol import updates as u
from server.agent.totals import USAGE_EVENT, CallUsage
from server.emit import Emitter
from server.errors import DomainError
from server.providers import ProviderError, ReasoningDelta, Retrying, ServerNotice, TextDelta
from server.transcript import NewMessage, Store

log = logging.getLogger(__name__)

DRAFT_INTERVAL = 0.25  # seconds between saves of a streaming answer's draft (what a crash can lose at most)


class PartialAnswer:
    def __init__(self, store: Store, session_id: str, turn_id: str, emit: Emitter):
        self.store, self.session_id, self.turn_id, self.emit = store, session_id, turn_id, emit
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._draft_at = 0.0
        self.usage: CallUsage | None = None  # the finished call's figures, stored with its answer (B-CACHE-5)

    def start(self) -> None:
        """A new model call begins: nothing streamed yet."""
        self.clear()
        self._draft_at = 0.0

    def clear(self) -> None:
        self._text.clear()
        self._reasoning.clear()

    def take_usage(self) -> list[tuple[str, dict[str, Any]]]:
        """The finished call's ``usage`` event, to store with its answer (then it is no longer held here)."""
        usage, self.usage = self.usage, None
        return [(USAGE_EVENT, usage.event)] if usage is not None else []

    def on_event(self, event: Any) -> Awaitable[None] | None:
        """The provider's stream events: deltas go to the client and into the draft."""
        if isinstance(event, TextDelta):
            self._text.append(event.text)
            self.emit(u.AssistantDelta(text=event.text))
            return self._maybe_save_draft()
        elif isinstance(event, ReasoningDelta):
            self._reasoning.append(event.text)
            self.emit(u.ReasoningDelta(text=event.text))
            return self._maybe_save_draft()
        elif isinstance(event, Retrying):
            self.emit(
                u.Notice(
                    level="warning",
                    message=f"provider: {event.reason}; retrying in {event.delay:.1f} s (attempt {event.attempt})",
                )
            )
        elif isinstance(event, ServerNotice):
            self.emit(u.Notice(level="warning", message=event.message))
        return None

    def _maybe_save_draft(self) -> Awaitable[None] | None:
        """Keep the answer so far at most every ``DRAFT_INTERVAL`` s, so a killed server loses little of it."""
        if time.monotonic() - self._draft_at < DRAFT_INTERVAL:
            return None
        self._draft_at = time.monotonic()
        return self._save_draft()

    async def _save_draft(self) -> None:
        try:
            await self.store.save_draft(
                self.session_id, self.turn_id, "".join(self._text), "".join(self._reasoning) or None
            )
        except DomainError as exc:  # a draft is insurance; the answer itself is still stored (or fails) at its end
            log.warning("could not save the draft of turn %s: %s", self.turn_id, exc)

    async def keep(self, failure: ProviderError | None) -> None:
        """Store the answer so far as ``interrupted``, with the call's usage if it finished; an answer stopped for
        its size leaves nothing behind."""
        if failure is not None and failure.kind == "too_large":
            self.clear()
            await self.store.discard_draft(self.session_id, self.turn_id)
            return
        partial = failure.partial if failure is not None else None
        text = "".join(self._text) or (partial.content if partial else "")
        reasoning = "".join(self._reasoning) or (partial.reasoning if partial else "")
        usage = self.usage
        events = self.take_usage()
        if text or reasoning:
            msg = NewMessage("assistant", text, reasoning=reasoning or None, status="interrupted")
            stored = await self.store.append_messages(self.session_id, [msg], self.turn_id, events)
            self.emit(
                u.AssistantMessage(content=text, reasoning=reasoning or None, interrupted=True), seq=stored[0].seq
            )
        else:
            for kind, payload in events:
                await self.store.add_event(self.session_id, kind, payload, self.turn_id)
        if usage is not None:
            self.emit(usage.update)
        self.clear()
