"""Putting a turn together for a session: provider, tools, approvals, views and the frozen context."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol import updates as u
from protocol.messages import (
    CompactSessionResult,
    SteerTurnResult,
    SubmitTurnParams,
    SubmitTurnResult,
    TurnError,
    TurnUsage,
)
from server.agent.approvals import Approvals
from server.agent.emit import Emitter
from server.agent.loop import ModelChoice, Turn
from server.agent.models import price_of, provider_settings, window_of
from server.agent.views import (
    COMPACTION_EVENT,
    ViewBuilder,
    build_view,
    effective_settings,
    keep_resume_point,
    stored_compaction,
)
from server.checkpoints import Checkpointer
from server.config import ProviderSettings, Settings
from server.context import RequestView, ViewSettings, estimate_text_tokens, fit_to_window
from server.frozen import read_frozen_context
from server.mcp.service import load_frozen
from server.providers import ChatProvider, OpenAICompatibleProvider
from server.providers.anthropic import AnthropicProvider
from server.providers.capabilities import Price
from server.providers.responses import ResponsesProvider
from server.tools import ToolContext, tool_specs
from server.transcript import NewMessage, Session, new_id

if TYPE_CHECKING:
    from server.runtime import Runtime


def context_window(rt: Runtime, session: Session | None = None) -> int:
    return window_of(provider_settings(rt.settings, session))


def view_settings(
    rt: Runtime,
    window: int | None = None,
    ratio: float | None = None,
    keep: int | None = None,
    session: Session | None = None,
) -> ViewSettings:
    """The pipeline's settings for ``session``'s model (its window), with a client's overrides."""
    s = rt.settings
    return ViewSettings(
        window or context_window(rt, session),
        ratio if ratio is not None else s.threshold_ratio,
        keep if keep is not None else s.keep_recent_tokens,
        s.compact_target_ratio,
    )


def tool_overhead_tokens(extra_specs: list[dict] | None = None) -> int:
    """What the tool definitions add to every request (they are not part of the message view): the built-in
    tools', plus a session's frozen MCP tools' when given."""
    return estimate_text_tokens(json.dumps(tool_specs() + (extra_specs or [])))


async def session_tool_overhead_tokens(rt: Runtime, session_id: str) -> int:
    frozen = await load_frozen(rt.store, session_id)
    return tool_overhead_tokens(frozen.specs() if frozen else None)


def provider_for(rt: Runtime, session: Session | None = None) -> ChatProvider | None:
    return rt.models.provider(rt.settings, session)


class LiveModels:
    """The live providers: one client per distinct configuration of a session's model, built on first use."""

    run_tool = None  # tools run for real

    def __init__(self) -> None:
        self._built: dict[tuple, Any] = {}  # ChatProviders, each with an aclose()

    def provider(self, settings: Settings, session: Session | None) -> ChatProvider | None:
        p = provider_settings(settings, session)
        if not p.configured:
            return None
        key = (p.kind, p.base_url, p.api_key, p.model, p.max_output_tokens, p.thinking_budget_tokens)
        if key not in self._built:
            self._built[key] = new_provider(p, settings.provider_read_timeout_seconds)
        return self._built[key]

    def price(self, settings: Settings, session: Session | None) -> Price | None:
        return price_of(provider_settings(settings, session))

    async def aclose(self) -> None:
        for provider in self._built.values():
            await provider.aclose()


def new_provider(p: ProviderSettings, read_timeout: float) -> ChatProvider:
    """The ChatProvider for ``[provider] kind`` (config.PROVIDER_KINDS), each one module under server/providers/."""
    assert p.base_url and p.model
    if p.kind == "anthropic":
        return AnthropicProvider(
            p.base_url,
            p.api_key,
            p.model,
            read_timeout=read_timeout,
            max_tokens=p.max_output_tokens,
            thinking_budget_tokens=p.thinking_budget_tokens,
        )
    if p.kind == "openai-responses":
        return ResponsesProvider(
            p.base_url, p.api_key, p.model, read_timeout=read_timeout, max_output_tokens=p.max_output_tokens
        )
    return OpenAICompatibleProvider(p.base_url, p.api_key, p.model, read_timeout=read_timeout)


async def choose_model(rt: Runtime, session_id: str) -> ModelChoice | None:
    """Before each model call: the session's model and approval policy as stored now, so ``updateSession``
    applies from the next call (the view is built for the new model's window). None: nothing configured."""
    session = await rt.store.get_session(session_id)
    provider = provider_for(rt, session)
    if provider is None:
        return None
    return ModelChoice(
        provider,
        view_settings(rt, session=session),
        rt.models.price(rt.settings, session),
        session.approval_policy or rt.settings.approval_policy,
    )


async def submit_turn(rt: Runtime, params: SubmitTurnParams) -> SubmitTurnResult:
    session = await rt.store.get_session(params.session_id)
    if not params.queue:
        rt.turns.ensure_idle(session.id)
    provider = provider_for(rt, session)
    if provider is None:
        turn_id = new_id("turn_")
        emit = Emitter(rt.notify, session.id, turn_id)
        message = (
            "no model provider is configured: set THREADLINE_BASE_URL and THREADLINE_MODEL (and "
            "THREADLINE_API_KEY), config.toml, or initializationOptions.provider"
        )
        error = TurnError(code="noProvider", message=message)
        emit(u.Notice(level="error", message=message))
        emit(u.TurnCompleted(stop_reason="error", error=error))  # clients close a turn on this, as for any turn
        return SubmitTurnResult(turn_id=turn_id, stop_reason="error", usage=TurnUsage(), error=error)
    turn_id = new_id("turn_")

    def cancelled() -> SubmitTurnResult:  # cancelled (or its session deleted) before it began: nothing was stored
        Emitter(rt.notify, session.id, turn_id)(u.TurnCompleted(stop_reason="cancelled"))
        return SubmitTurnResult(turn_id=turn_id, stop_reason="cancelled", usage=TurnUsage())

    async def build_and_run() -> SubmitTurnResult:
        try:
            current = await rt.store.get_session(session.id)  # a queued turn starts from what the last one left
            turn = await build_turn(rt, current, provider, turn_id)
        except asyncio.CancelledError:
            return cancelled()
        return await turn.run(params.text, params.images)

    # Registered before it is built, so a deleteSession or cancelTurn arriving meanwhile finds it.
    return await rt.turns.wait(
        rt.turns.start(session.id, turn_id, build_and_run, queue=params.queue, cancelled=cancelled)
    )


def steer_turn(rt: Runtime, session_id: str, text: str) -> SteerTurnResult:
    """``steerTurn``: the text waits for the running turn's next model call (``Turn._take_steers``)."""
    return SteerTurnResult(turn_id=rt.turns.steer(session_id, text))


async def build_turn(rt: Runtime, session: Session, provider: ChatProvider, turn_id: str | None = None) -> Turn:
    cwd = Path(session.cwd)
    frozen = read_frozen_context(cwd, rt.settings.home) if session.message_count == 0 else None
    turn_id = turn_id or new_id("turn_")
    emit = Emitter(rt.notify, session.id, turn_id)
    always = await rt.remembered_approvals(session.id)
    policy = session.approval_policy or rt.settings.approval_policy
    secrets = rt.settings.api_keys()
    tools = ToolContext(
        session.id,
        turn_id,
        cwd,
        rt.settings,
        rt.store,
        rt.artifacts,
        secrets,
        tuple(frozen.skill_roots) if frozen else (),
        rt.processes,
    )

    async def first_messages() -> list[NewMessage]:
        if frozen is None:
            return []
        for notice in frozen.notices:
            emit(u.Notice(level="warning", message=notice))
            await rt.store.add_event(session.id, "notice", {"level": "warning", "message": notice}, turn_id)
        return [NewMessage("system", text) for text in frozen.messages]

    views = ViewBuilder(
        rt.store,
        view_settings(rt, session=session),
        provider.model,
        rt.calibrations,
        overhead_tokens=tool_overhead_tokens(),
        sessions=rt.sessions,
    )

    async def session_tools(turn_emit: Emitter):
        return await rt.mcp.session_tools(rt.store, session.id, cwd, turn_emit, rt.ask_client)

    # A replay's runner hands back recorded results: nothing is written (no checkpoints), no MCP server starts,
    # and its one provider answers every call (the model is not chosen again).
    replayed = rt.models.run_tool
    extra: dict[str, Any] = (
        {"run_tool": replayed}
        if replayed is not None
        else {
            "checkpoints": Checkpointer(
                rt.store,
                rt.blobs,
                session.id,
                turn_id,
                cwd,
                rt.settings.checkpoint_max_file_bytes,
                rt.settings.checkpoint_max_session_bytes,
            ),
            "choose_model": lambda: choose_model(rt, session.id),
            "session_tools": session_tools,
        }
    )
    return Turn(
        store=rt.store,
        provider=provider,
        tools=tools,
        approvals=Approvals(rt.store, rt.ask_client, policy, always, cwd, rt.settings.home),
        emit=emit,
        views=views,
        max_iterations=rt.settings.max_iterations,
        totals=await rt.session_totals(session.id),
        price=rt.models.price(rt.settings, session),
        first_messages=first_messages,
        turn_id=turn_id,
        take_steers=lambda last: rt.turns.take_steers(session.id, last),
        **extra,
    )


async def compact_session(rt: Runtime, session_id: str, focus: str | None) -> CompactSessionResult:
    """Compact now (``compactSession``): a summary compaction of the stored transcript, stored and announced like
    any other, so the next request starts from it (B-CACHE-2); ``focus`` goes verbatim into its Focus: section."""
    session = await rt.store.get_session(session_id)
    rt.turns.ensure_idle(session_id)  # a running turn carries its own compaction: compact between turns
    model = provider_settings(rt.settings, session).model or ""
    settings = effective_settings(
        view_settings(rt, session=session),
        await session_tool_overhead_tokens(rt, session_id),
        rt.calibrations.get(model),
    )
    view, tokens = await build_view(
        rt.store,
        rt.sessions,
        session_id,
        await stored_compaction(rt.store, session_id),
        lambda state: (state.compact_now(settings, focus), state.tokens),
        settings.context_window_tokens,
    )
    if view is None or view.compaction is None:
        return CompactSessionResult(compacted=False, mode="full", before_tokens=tokens, after_tokens=tokens)
    event = {
        "mode": view.mode,
        "beforeTokens": view.before_tokens,
        "afterTokens": view.estimated_tokens,
        "summary": view.summary or "",
        "compaction": view.compaction.to_json(),
        "requested": True,
    }
    if focus and focus.strip():
        event["focus"] = focus.strip()
    await rt.store.add_event(session_id, COMPACTION_EVENT, event)
    Emitter(rt.notify, session_id, None)(
        u.ContextCompacted(
            mode=view.mode,
            before_tokens=view.before_tokens,
            after_tokens=view.estimated_tokens,
            summary=view.summary or "",
        )
    )
    return CompactSessionResult(
        compacted=True,
        before_tokens=view.before_tokens,
        after_tokens=view.estimated_tokens,
        mode=view.mode,
        summary=view.summary,
    )


@dataclass(frozen=True)
class ContextView:
    """The request view the next model call would send now, with the budgets it was planned under."""

    view: RequestView
    settings: ViewSettings  # the session's (or the request's) window, threshold and tail
    effective: ViewSettings  # the same after the tool definitions' reserve and the learned calibration
    reserved_tokens: int


async def context_view(
    rt: Runtime,
    session_id: str,
    context_window_tokens: int | None = None,
    threshold_ratio: float | None = None,
    keep_recent_tokens: int | None = None,
) -> ContextView:
    """The view the next model call would really send (the same budget the agent loop uses), built on the
    session's state and stored compaction; nothing is stored or announced. For a history no turn has compacted,
    where its safe tail starts is saved so the next server resumes from there (cold start, B-CACHE-3)."""
    session = await rt.store.get_session(session_id)
    settings = view_settings(rt, context_window_tokens, threshold_ratio, keep_recent_tokens, session=session)
    reserved = await session_tool_overhead_tokens(rt, session_id)
    model = provider_settings(rt.settings, session).model or ""
    effective = effective_settings(settings, reserved, rt.calibrations.get(model))
    compaction = await stored_compaction(rt.store, session_id)
    view = await build_view(
        rt.store,
        rt.sessions,
        session_id,
        compaction,
        lambda state: state.view(effective, compaction),
        effective.context_window_tokens,
    )
    if compaction is None:
        await keep_resume_point(rt.store, rt.sessions, session_id, view)
    return ContextView(fit_to_window(view), settings, effective, reserved)
