"""One agent turn: store the user message, then model calls and tool runs until an answer has no tool calls.

Every step is committed before the next begins (a tool result is stored before the next provider call), so a
crash at any point loses nothing that happened. Before every model call the context pipeline builds the request
view from the stored transcript (R-PIPE-2); after a compaction each request repeats the previous one plus what was
stored since (B-CACHE-1), across turns and restarts (B-CACHE-3).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from dataclasses import dataclass, field
from typing import Any

import msgspec

from protocol import updates as u
from protocol.messages import Image, OpenAIFunction, OpenAIToolCall, StopReason, SubmitTurnResult, TurnError, TurnUsage
from server.agent import cut, turn_hooks
from server.agent.approvals import Approvals
from server.agent.batches import batches, run_batch
from server.agent.partial import PartialAnswer
from server.agent.ports import NO_PORTS, TurnPorts
from server.agent.refused import ServerRoom, TurnFailed, learn_window, retry, within_room
from server.agent.toolcalls import run_call
from server.agent.totals import TurnTotals, account_call
from server.agent.views import ViewBuilder, reserve_tokens
from server.checkpoints import Checkpointer
from server.context import RequestView
from server.emit import Emitter
from server.errors import DomainError
from server.hooks.service import SessionHooks
from server.providers import ChatProvider, ChatResult, ProviderError, drops_tools
from server.providers.capabilities import Price
from server.tools import (
    Tool,
    ToolContext,
    ToolRunner,
    available_tools,
    run_tool,
)
from server.transcript import NewMessage, Store, new_id

log = logging.getLogger(__name__)

COMMAND_EVENT = "commandExpanded"  # {seq, typed} of a user message that is a slash command's expansion
CANCELLED_RESULT = "Tool call interrupted: the turn was cancelled before this tool finished."


@dataclass
class Turn:
    """One turn of one session. Its collaborators are objects; what it asks of its session as it runs (frozen
    context, MCP tools, hooks, the model of the next call, steers, usage told elsewhere) goes through ``ports``.
    ``server.services.turn_factory`` builds it."""

    store: Store
    provider: ChatProvider
    tools: ToolContext
    approvals: Approvals
    emit: Emitter
    views: ViewBuilder
    max_iterations: int
    totals: TurnTotals  # the session's running totals, shared across its turns
    ports: TurnPorts = NO_PORTS
    run_tool: ToolRunner = run_tool  # a replay's hands back recorded results
    price: Price | None = None  # the model's price; None: no cost is reported
    turn_id: str = field(default_factory=lambda: new_id("turn_"))
    checkpoints: Checkpointer | None = None  # keeps what file writes replace (None in replay: nothing is written)
    new_session: bool = False  # nothing stored yet: the SessionStart hooks run
    hooks: SessionHooks | None = None  # the ports' answer as the turn begins
    _stop_blocks: int = 0
    _usage: TurnUsage = field(default_factory=TurnUsage)
    _unfinished: set[str] = field(default_factory=set)  # ids of calls cut off mid-way at the output limit
    room: ServerRoom = field(default_factory=ServerRoom)  # what a full model server had room for (refused.py)
    _answer: PartialAnswer = field(init=False)

    def __post_init__(self) -> None:
        self._answer = PartialAnswer(self.store, self.session_id, self.turn_id, self.emit)

    @property
    def session_id(self) -> str:
        return self.tools.session_id

    async def run(self, text: str, images: list[Image] | None, typed: str | None = None) -> SubmitTurnResult:
        """``typed``: what the user typed when ``text`` is a slash command's expansion (kept beside it)."""
        self.emit(u.TurnStarted())
        stop, error = await self._steps(text, images, typed)
        # Before the turn is announced as ended: a client that sees it end may start the next turn at once.
        await self._keep_sent()
        return self._finish(stop, error)

    async def _steps(
        self, text: str, images: list[Image] | None, typed: str | None
    ) -> tuple[StopReason, TurnError | None]:
        pending: list[OpenAIToolCall] = []
        cuts = 0  # text answers cut at the output limit in this turn
        try:
            await self._begin(text, images, typed)
            for _ in range(self.max_iterations):
                await self._deliver_steers()
                result = await self._call_model()
                calls = await self._store_answer(result)
                if cut.was_cut(result):  # never silent, and a call still being written never runs
                    if not calls:
                        cuts += 1
                        if await cut.after_cut_text(self.store, self.emit, self.session_id, self.turn_id, cuts):
                            continue
                        return "error", cut.runaway(cuts)
                    self._unfinished = cut.incomplete_calls(calls)
                    cuts += bool(self._unfinished)  # a call cut mid-way is a cut answer too: it bounds the turn
                    await cut.after_cut_calls(
                        self.store, self.emit, self.session_id, self.turn_id, len(self._unfinished), cuts
                    )
                if not calls and (reason := await turn_hooks.stop(self.hooks, self._stop_blocks)):
                    self._stop_blocks += 1  # a Stop hook sends the turn on, its reason the next user input
                    await self._deliver_steers([reason])
                    continue
                if not calls and not (steered := self.ports.take_steers(True)):  # nothing: closed to steering
                    return "endTurn", None
                if not calls:  # steered while the answer streamed: the model hears it in this turn
                    await self._deliver_steers(steered)
                    continue
                pending = list(calls)
                for batch in batches(calls):  # task calls next to each other run together (B-SUB-1)
                    await run_batch(functools.partial(self._run_pending, pending=pending), batch)
                if cuts > cut.MAX_CONTINUATIONS:  # every call is answered; the runaway ends here
                    return "error", cut.runaway(cuts)
            await self._keep_steers()
            return "maxIterations", TurnError(
                code="maxIterations", message=f"stopped after {self.max_iterations} model calls in one turn"
            )
        except TurnFailed as exc:
            await self._keep_steers()
            return "error", TurnError(code=exc.code, message=exc.message)
        except DomainError as exc:  # the disk refused a write (full, read-only): end the turn saying so
            log.warning("turn %s stopped: %s", self.turn_id, exc.message)
            return "error", TurnError(code=exc.code, message=exc.message)
        except asyncio.CancelledError:
            await self._record_interruption(pending)
            await self._keep_steers()
            return "cancelled", None

    async def _keep_sent(self) -> None:
        """The turn's last request is stored (as digests) for ``stablePrefixTokens`` after a restart."""
        try:
            await self.views.keep_sent(self.session_id)
        except (Exception, asyncio.CancelledError):  # the turn is ending either way; only that figure is lost
            log.exception("could not store the last request of turn %s", self.turn_id)

    # --- steps --------------------------------------------------------------------------------------

    async def _begin(self, text: str, images: list[Image] | None, typed: str | None) -> None:
        self.hooks = await self.ports.hooks(self.emit)
        started = await turn_hooks.session_start(self.hooks) if self.new_session else None
        refused, context = await turn_hooks.prompt_submit(self.hooks, text)
        if refused is not None:  # before anything is stored or any model call
            raise TurnFailed("hookBlocked", f"the prompt was refused by a UserPromptSubmit hook: {refused}")
        first = await self.ports.first_messages(self.emit)
        await self.store.title_from_prompt(self.session_id, text)
        if started:
            first.append(NewMessage("system", started))
        # The wire's images go to the client as they came; the store keeps their JSON ({mimeType, data})
        user = NewMessage("user", text, images=msgspec.to_builtins(images) if images else None)
        extra = [NewMessage("user", context)] if context else []
        stored = await self.store.append_messages(self.session_id, [*first, user, *extra], self.turn_id)
        seq = stored[len(first)].seq
        if typed is not None:  # the message holds what the model sees; the event what the user typed
            await self.store.add_event(self.session_id, COMMAND_EVENT, {"seq": seq, "typed": typed}, self.turn_id)
        self.emit(u.UserMessage(text=text, images=images or None, typed=typed), seq=seq)
        self.room.task = text  # a view kept small for a full server still carries the turn's request
        await self._add_session_tools(await self.ports.session_tools(self.emit))

    async def _add_session_tools(self, tools: dict[str, Tool]) -> None:
        """The session's MCP tools join the request's tools; their definitions are reserved in the budget."""
        if not tools:
            return
        tools = {**self.tools.session_tools, **tools}  # after the turn's own (``task``)
        self.tools = dataclasses.replace(self.tools, session_tools=tools)
        if not drops_tools(self.provider):  # a template that drops the tools holds no room for them (/props)
            self.views.overhead_tokens = reserve_tokens(self._tool_specs())

    async def _choose_model(self) -> None:
        choice = await self.ports.choose_model()
        if choice is None:
            return
        self.provider, self.price, self.approvals.policy = choice.provider, choice.price, choice.approval_policy
        self.views.settings, self.views.model = choice.settings, choice.provider.model

    async def _deliver_steers(self, texts: list[str] | None = None) -> None:
        """Store what was steered in as user messages, after every result of the last answer's calls (a user
        message may not come between a call and its result), so the next request carries it."""
        texts = texts if texts is not None else self.ports.take_steers(False)
        if not texts:
            return
        stored = await self.store.append_messages(self.session_id, [NewMessage("user", t) for t in texts], self.turn_id)
        for text, msg in zip(texts, stored):
            self.emit(u.UserMessage(text=text, steered=True), seq=msg.seq)

    async def _keep_steers(self) -> None:
        """A turn that ends before its next model call still keeps what was steered in (the next turn sends it)."""
        try:
            while texts := self.ports.take_steers(True):  # until none is left, which closes the turn to steering
                await self._deliver_steers(texts)
        except Exception:  # the turn is ending anyway; the text reached the server but the disk refused it
            log.exception("could not store the steered messages of turn %s", self.turn_id)

    async def _call_model(self) -> ChatResult:
        await self._choose_model()
        view = await self.views.next_view(
            self.session_id,
            lambda: turn_hooks.pre_compact(self.hooks, "auto"),
            lambda before: self.emit(u.ContextCompacting(trigger="auto", before_tokens=before)),
        )
        if await self._announce(view):
            await turn_hooks.post_compact(self.hooks, "auto", view.event_summary or "")
        view = await within_room(self, view)  # a full server had room for less in this turn
        try:
            return await self._stream(view)
        except ProviderError as exc:
            if exc.kind != "context_too_long":
                await self._answer.keep(exc)
                raise TurnFailed(exc.kind, exc.message) from None
            refusal = exc
        await learn_window(self, view, refusal)
        return await retry(self, view, refusal)  # R-PTL-1

    @property
    def answer(self) -> PartialAnswer:
        return self._answer

    async def stream(self, view: RequestView) -> ChatResult:
        return await self._stream(view)

    async def announce(self, view: RequestView, force: bool = False) -> bool:
        return await self._announce(view, force)

    def _tool_specs(self) -> list[dict[str, Any]]:
        """The tool definitions each request sends, and what the view reserves for them (``reserve_tokens``)."""
        return [t.spec() for t in available_tools(self.tools).values()]

    async def _stream(self, view: RequestView) -> ChatResult:
        self._answer.start()
        self.views.record_sent(self.session_id, view.messages)  # for getContextView's stablePrefixTokens
        result = await self.provider.stream_chat(
            view.messages,
            self._tool_specs(),
            self._answer.on_event,
            cache_key=self.session_id,
        )
        if self.views.overhead_tokens and drops_tools(self.provider):  # the server dropped them: they count for 0
            self.views.overhead_tokens = 0
        self.room.succeeded(view.estimated_tokens + self.views.overhead_tokens)
        await self._account(view, result)
        return result

    async def _account(self, view: RequestView, result: ChatResult) -> None:
        """B-CACHE-5: each call's figures, cached input tokens included, are stored as a ``usage`` event, in the
        answer's transaction (``_store_answer``): a model call's writes are one round trip to the database."""
        if result.usage:
            await self.views.observe_usage(view.estimated_tokens, result.usage.prompt_tokens)
        call = account_call(
            result.usage,
            self.views.session_view.shown(view.estimated_tokens),  # B-TOK-4: without usage, in the provider's tokens
            self.views.window_tokens,
            self.price,
            self.totals,
            self._usage,
            view.budget,
        )
        self._usage = call.turn
        self._answer.usage = call

    async def _announce(self, view: RequestView, force: bool = False) -> bool:
        """R-OBS-1: each new compaction is stored as an event and sent to the client; False: nothing new."""
        event = self.views.compaction_event(view, force)
        if event is None:
            return False
        event["trigger"] = "promptTooLong" if force else "auto"  # force: the R-PTL-1 retry's fallback
        if view.clipped_messages:
            event["clippedMessages"] = view.clipped_messages
            self.emit(
                u.Notice(
                    level="warning",
                    message=(
                        f"{view.clipped_messages} oversized message(s) were shortened in this request so it fits the "
                        "context window; the transcript keeps them whole"
                    ),
                )
            )
        await self.store.add_event(self.session_id, "contextCompacted", event, self.turn_id)
        self.emit(
            u.ContextCompacted(
                mode=view.mode,
                before_tokens=event["beforeTokens"],
                after_tokens=event["afterTokens"],
                summary=event["summary"],
            )
        )
        return True

    async def _store_answer(self, result: ChatResult) -> list[OpenAIToolCall]:
        calls = [
            OpenAIToolCall(
                id=c.id or new_id("call_")[:29], function=OpenAIFunction(name=c.name, arguments=c.arguments or "{}")
            )
            for c in result.tool_calls
        ]
        # One shape from here on: the wire's call, sent to the client as is and stored as its JSON
        msg = NewMessage(
            "assistant",
            result.content or ("" if not calls else None),
            tool_calls=msgspec.to_builtins(calls) or None,
            reasoning=result.reasoning or None,
            reasoning_items=result.reasoning_items or None,
        )
        usage = self._answer.usage
        events = self._answer.take_usage()
        self._answer.clear()  # before the write: a cancel that lands during it comes after it has committed
        factors = self.views.unsaved_factors()
        stored = await self.store.append_messages(self.session_id, [msg], self.turn_id, events, factors)
        self.views.factors_saved(factors)
        if usage is not None:
            self.emit(usage.update)
            await self.ports.count_usage(usage.event)
        self.emit(
            u.AssistantMessage(
                content=result.content or "", reasoning=result.reasoning or None, tool_calls=calls or None
            ),
            seq=stored[0].seq,
        )
        return calls

    async def _run_pending(self, call: OpenAIToolCall, pending: list[OpenAIToolCall]) -> None:
        await run_call(self, call, self._unfinished)
        pending.remove(call)  # its result is stored: an interruption from here on need not close it

    # --- endings ------------------------------------------------------------------------------------

    async def _record_interruption(self, pending: list[OpenAIToolCall]) -> None:
        """Keep the partial answer (marked interrupted) and close every call that never got its result."""
        try:
            usage = self._answer.usage  # a call that finished but whose answer was not stored yet
            await self._answer.keep(None)
            if usage is not None:
                await self.ports.count_usage(usage.event)
            if pending:
                results = [
                    NewMessage("tool", CANCELLED_RESULT, tool_call_id=c.id, name=c.function.name, tool_status="error")
                    for c in pending
                ]
                stored = await self.store.append_messages(self.session_id, results, self.turn_id)
                for call, msg in zip(pending, stored):
                    self.emit(
                        u.ToolResult(
                            tool_call_id=call.id, tool=call.function.name, status="error", content=CANCELLED_RESULT
                        ),
                        seq=msg.seq,
                    )
        except Exception:  # the turn is ending anyway; the view's repair covers what could not be stored
            log.exception("could not record the interruption of turn %s", self.turn_id)

    def _finish(self, stop: StopReason, error: TurnError | None = None) -> SubmitTurnResult:
        self.emit(u.TurnCompleted(stop_reason=stop, error=error))
        return SubmitTurnResult(turn_id=self.turn_id, stop_reason=stop, usage=self._usage, error=error)
