"""The context use cases: the view the next model call would send (``getContextView``), and compacting now.

``context_view`` is a read: it builds on the session's held state and writes nothing. A resume point or view
snapshot it learns waits in the session's view state (``ViewState.unsaved``, held by its handle) for a path that
writes anyway: the session's next turn, ``prepare_view`` (an import), or the server's close."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import msgspec

from protocol import updates as u
from protocol.messages import (
    ClearedOutputInfo,
    CompactionRecord,
    CompactionTrigger,
    CompactSessionResult,
    ContextBreakdown,
    ContextBudget,
    ContextViewResult,
    GetContextViewParams,
    TokenCalibration,
)
from server.agent import turn_hooks
from server.agent.digests import stable_prefix_tokens
from server.agent.models import provider_settings
from server.agent.plans import stored_plan
from server.agent.view_resume import build_view, keep_resume_point, save_unsaved
from server.agent.views import (
    COMPACTION_EVENT,
    SessionView,
    planned_view,
    recall_server_window,
    stored_cleared,
    stored_compaction,
    tool_reserve_tokens,
)
from server.context import RequestView, ViewSettings, fit_to_window
from server.context.breakdown import Breakdown, breakdown
from server.context.budget import apply_budget
from server.emit import Emitter
from server.errors import InvalidParams
from server.grounding.tools import editor_tools
from server.mcp.service import load_frozen
from server.providers import drops_tools
from server.services.models import view_settings
from server.services.needs import CoreClient, CoreExtensions, CoreModels, CoreStore
from server.services.processes import process_infos
from server.services.subagents import task_spec
from server.sessions import Session
from server.tools.web.tools import search_tools
from server.transcript import Store, StoredSession
from server.worktrees.confined import session_sandbox


class ContextNeeds(CoreStore, CoreModels, CoreClient, CoreExtensions, Protocol):
    """What the context use cases use of the ``Core``."""


MAX_FOCUS_CHARS = 4000


async def session_tool_overhead_tokens(core: ContextNeeds, stored: StoredSession) -> int:
    """The tool definitions' reserve of a session's requests: the built-in tools, its frozen MCP tools and, but in
    a subagent's session, ``task`` (B-SUB-1), as the turn's loop offers them."""
    frozen = await load_frozen(core.store, stored.id)
    own = [] if stored.parent_tool_call_id else [task_spec(core, Path(stored.cwd))]
    own += [t.spec() for t in search_tools(core.settings.web).values()]
    own += [t.spec() for t in editor_tools(core.editor).values()] if core.editor else []
    return tool_reserve_tokens([*own, *(frozen.specs() if frozen else [])])


@dataclass(frozen=True)
class ContextView:
    """The request view the next model call would send now, with the budgets it was planned under."""

    view: RequestView
    planned: SessionView  # the session's (or the request's) settings, reserve, calibration and server window

    @property
    def settings(self) -> ViewSettings:
        return self.planned.settings

    @property
    def effective(self) -> ViewSettings:
        return self.planned.effective

    @property
    def reserved_tokens(self) -> int:
        return self.planned.reserved_tokens


async def session_view(core: ContextNeeds, stored: StoredSession, settings: ViewSettings | None = None) -> SessionView:
    """What the session's next request is planned under, as the turn's loop plans it (``ViewBuilder``)."""
    model = provider_settings(core.settings, stored).model or ""
    await recall_server_window(core.store, stored.id, core.server_windows)
    dropped = drops_tools(core.models.provider(core.settings, stored))  # its server drops them: no room for them
    return SessionView(
        settings or view_settings(core.settings, stored),
        0 if dropped else await session_tool_overhead_tokens(core, stored),
        core.calibrations.get(model),
        core.server_windows.get(model),
    )


async def context_view(
    core: ContextNeeds,
    session_id: str,
    context_window_tokens: int | None = None,
    threshold_ratio: float | None = None,
    keep_recent_tokens: int | None = None,
) -> tuple[ContextView, Session]:
    """The view the next model call would really send (the same budget the agent loop uses), built on the
    session's state and stored compaction; nothing is stored or announced. For a history no turn has compacted,
    where its safe tail starts is noted in the session's handle, for the next server to resume from (cold start,
    B-CACHE-3) once a path that writes keeps it."""
    stored, session = await core.session(session_id)
    settings = view_settings(core.settings, stored, context_window_tokens, threshold_ratio, keep_recent_tokens)
    planned = await session_view(core, stored, settings)
    effective = planned.effective
    compaction = await stored_compaction(core.store, session_id)
    cleared = await stored_cleared(core.store, session_id)
    view = await build_view(
        core.store,
        session.view,
        compaction,
        lambda state: planned_view(state, effective, compaction, cleared),
        effective.context_window_tokens,
    )
    if compaction is None:
        await keep_resume_point(core.store, session.view, view)
    return ContextView(fit_to_window(view), planned), session


async def get_context_view(core: ContextNeeds, params: GetContextViewParams) -> ContextViewResult:
    """``getContextView``: the request view the next model call would send now, without calling a model."""
    if params.context_window_tokens is not None and params.context_window_tokens <= 0:
        raise InvalidParams("contextWindowTokens must be positive")
    if params.threshold_ratio is not None and not 0 < params.threshold_ratio <= 1:
        raise InvalidParams("thresholdRatio must be in (0, 1]")
    if params.keep_recent_tokens is not None and params.keep_recent_tokens < 0:
        raise InvalidParams("keepRecentTokens must be >= 0")
    got, session = await context_view(
        core, params.session_id, params.context_window_tokens, params.threshold_ratio, params.keep_recent_tokens
    )
    view, planned = got.view, got.planned
    shown = planned.shown
    cal = planned.calibration
    return ContextViewResult(
        messages=view.messages,
        estimated_tokens=shown(view.estimated_tokens),
        threshold_tokens=shown(view.threshold_tokens),
        context_window_tokens=got.settings.context_window_tokens,
        keep_recent_tokens=view.keep_recent_tokens,
        reserved_tokens=shown(got.reserved_tokens),
        mode=view.mode,
        compacted_tool_outputs=view.compacted_tool_outputs,
        transcript_messages=view.transcript_messages,
        before_tokens=shown(view.before_tokens),
        summary=view.summary,
        compact_target_tokens=shown(got.effective.target_tokens),
        stable_prefix_tokens=shown(await stable_prefix_tokens(core.store, session.sent, view.messages)),
        plan=await stored_plan(core.store, params.session_id),
        processes=process_infos(session.processes),
        breakdown=wire_breakdown(
            breakdown(view, got.reserved_tokens, got.settings.context_window_tokens),
            shown,
            got.settings.context_window_tokens,
            [ClearedOutputInfo(c.tool_call_id, c.tool, shown(c.tokens), c.reason) for c in view.cleared],
        ),
        compactions=await compaction_history(core.store, params.session_id, shown),
        calibration=TokenCalibration(factor=planned.factor, samples=cal.samples if cal else 0),
        budget=wire_budget(view, planned.settings),
    )


def wire_budget(view: RequestView, settings: ViewSettings) -> ContextBudget | None:
    """B-BUDGET-1: the budget the view was planned against, as ``getContextView`` reports it."""
    report = view.budget
    if report is None and settings.budget is not None:  # a view the budget does not apply to (the fallback)
        report = apply_budget([], settings.budget, {}, 0, decide=False).report
    if report is None:
        return None
    return ContextBudget(tokens=report.tokens, source=report.source, reason=report.reason)


def wire_breakdown(
    parts: Breakdown, shown: Callable[[int], int], window: int, cleared: list[ClearedOutputInfo] | None = None
) -> ContextBreakdown:
    """The breakdown in the provider's tokens (B-TOK-4), its relation kept exact: the message parts are scaled as
    running sums, so they add up to the shown ``estimatedTokens``; ``free`` is what the shown figures leave."""
    out = dataclasses.asdict(parts)
    total = 0
    for key in ("system_prompt", "project_context", "summary", "messages", "placeholders"):
        before, total = total, total + out[key]
        out[key] = shown(total) - shown(before)
    out["tool_definitions"] = shown(parts.tool_definitions)
    out["free"] = max(0, window - shown(total) - out["tool_definitions"])
    return ContextBreakdown(**out, cleared=cleared or [])


async def compaction_history(
    store: Store, session_id: str, shown: Callable[[int], int] = int
) -> list[CompactionRecord]:
    """Every compaction of the session, oldest first; events stored before triggers were recorded read as
    ``manual`` when requested, else ``auto``."""
    out = []
    for event in await store.list_events(session_id, COMPACTION_EVENT):
        p = event.payload
        trigger: CompactionTrigger = "manual" if p.get("requested") else "auto"
        if p.get("trigger") in ("auto", "manual", "promptTooLong"):
            trigger = p["trigger"]
        out.append(
            CompactionRecord(
                event_id=event.id,
                at=event.created_at,
                mode=p.get("mode", "summarized"),
                trigger=trigger,
                before_tokens=shown(int(p.get("beforeTokens", 0))),
                after_tokens=shown(int(p.get("afterTokens", 0))),
                focus=p.get("focus"),
            )
        )
    return out


async def prepare_view(core: ContextNeeds, session_id: str) -> None:
    """Read a session's history into its view state now and keep what that learned (a mutating path: an import),
    so opening the session, here or after a restart, is fast."""
    _, session = await context_view(core, session_id)
    await save_unsaved(core.store, session.view)


async def compact_session(core: ContextNeeds, session_id: str, focus: str | None) -> CompactSessionResult:
    """Compact now (``compactSession``): a summary compaction of the stored transcript, stored and announced like
    any other, so the next request starts from it (B-CACHE-2); ``focus`` goes verbatim into its Focus: section."""
    if focus is not None and len(focus) > MAX_FOCUS_CHARS:
        raise InvalidParams(f"focus must be at most {MAX_FOCUS_CHARS} characters")
    stored, session = await core.session(session_id)
    emit = Emitter(core.notify, session_id, None)
    choices = session.hooks
    cwd = Path(stored.cwd)
    hooks = await core.hooks.for_turn(
        choices,
        cwd,
        emit,
        core.ask_client,
        core.store,
        core.settings.api_keys(),
        core.settings.unattended,
        await session_sandbox(core.store, core.settings.sandbox, session_id, cwd),  # B-HOOK-2
        core.processes,
    )
    planned = await session_view(core, stored)
    settings = planned.effective
    compaction = await stored_compaction(core.store, session_id)
    window = settings.context_window_tokens
    # R-OBS-1: said before the hooks and the summary, so a client shows it while they run
    before = await build_view(core.store, session.view, compaction, lambda state: state.tokens, window)
    emit(u.ContextCompacting(trigger="manual", before_tokens=before))
    notes = await turn_hooks.pre_compact(hooks, "manual")
    view, tokens = await build_view(
        core.store,
        session.view,
        compaction,
        lambda state: (state.compact_now(settings, focus, notes=notes), state.tokens),
        window,
    )
    if view is None or view.compaction is None:
        return CompactSessionResult(compacted=False, mode="full", before_tokens=tokens, after_tokens=tokens)
    manual: dict[str, Any] = {"requested": True} | ({"focus": focus.strip()} if focus and focus.strip() else {})
    event = planned.compaction_event(view, **manual, trigger="manual")
    await core.store.add_event(session_id, COMPACTION_EVENT, event)
    emit(
        u.ContextCompacted(
            mode=view.mode,
            before_tokens=view.before_tokens,
            after_tokens=view.estimated_tokens,
            summary=view.summary or "",
        )
    )
    await turn_hooks.post_compact(hooks, "manual", view.summary or "")
    return CompactSessionResult(
        compacted=True,
        before_tokens=view.before_tokens,
        after_tokens=view.estimated_tokens,
        mode=view.mode,
        summary=view.summary,
    )


def context_report(view: ContextViewResult) -> str:
    """What ``/context`` answers: the request against the window part by part, the plan, the last compaction."""
    window = max(view.context_window_tokens, 1)
    used = view.estimated_tokens + view.reserved_tokens
    lines = [
        f"Context: about {used} of {view.context_window_tokens} tokens ({100 * used // window}%); "
        f"the view is {view.mode}, compaction at {view.threshold_tokens} message tokens."
    ]
    if view.breakdown is not None:
        parts = msgspec.structs.asdict(view.breakdown)
        names = {"system_prompt": "system prompt", "project_context": "project context"}
        names |= {"tool_definitions": "tool definitions"}
        lines += [
            f"  {names.get(k, k):<17}{v:>8}  {100 * v // window:>3}%" for k, v in parts.items() if isinstance(v, int)
        ]
    if view.budget is not None:  # B-BUDGET-1
        cleared = len(view.breakdown.cleared) if view.breakdown else 0
        what = "auto" if view.budget.source == "auto" else f"{view.budget.tokens} tokens (config)"
        lines.append(f"Budget: {what}; {cleared} old tool outputs cleared.")
    if view.plan is not None:
        lines.append("Plan: " + "; ".join(f"[{e.status}] {e.step}" for e in view.plan.entries))
    if view.compactions:
        last = view.compactions[-1]
        focus = f", focus: {last.focus}" if last.focus else ""
        lines.append(
            f"Compactions: {len(view.compactions)}; the last ({last.trigger}, {last.mode}, {last.at}) took "
            f"{last.before_tokens} -> {last.after_tokens} tokens{focus}."
        )
    return "\n".join(lines)
