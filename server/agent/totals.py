"""Usage: what each model call used, added to the turn's and the session's running totals (B-METER-1, B-CACHE-5).

A session's totals are summed from its stored ``usage`` events when first needed, so they survive a restart and a
session dropped from memory (``server.sessions``) comes back with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import msgspec

from protocol import updates as u
from protocol.messages import TurnUsage

if TYPE_CHECKING:
    from server.context.budget import BudgetReport
    from server.providers import Usage as ProviderUsage
    from server.providers.capabilities import Price
    from server.transcript import Store

USAGE_EVENT = "usage"


@dataclass
class TurnTotals:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None  # None until a call had a known price


@dataclass(frozen=True)
class CallUsage:
    """One model call's figures: the turn's usage so far, the update sent to the client, the event stored."""

    turn: TurnUsage
    update: u.Usage
    event: dict[str, Any]


def account_call(
    usage: ProviderUsage | None,
    estimated_tokens: int,
    window: int,
    price: Price | None,
    totals: TurnTotals,
    turn: TurnUsage,
    budget: BudgetReport | None = None,
) -> CallUsage:
    """Add one call to ``totals`` (the session's, changed in place) and to ``turn`` (returned anew).

    B-METER-1: the meter shows the last request's size (the provider's count, else the view's estimate); session
    totals are reported separately. B-CACHE-5: cached input tokens are reported only when the provider says."""
    prompt = usage.prompt_tokens if usage else estimated_tokens
    completion = usage.completion_tokens if usage else 0
    cached = usage.cached_tokens if usage and usage.reports_cache else None
    written = usage.cache_write_tokens if usage and usage.cache_write_tokens else None
    cost = price.cost(prompt, completion, cached or 0, written or 0) if price else None
    totals.input_tokens += prompt
    totals.output_tokens += completion
    totals.cached_input_tokens += cached or 0
    totals.cache_write_tokens += written or 0
    if cost is not None:
        totals.cost_usd = (totals.cost_usd or 0.0) + cost
    so_far = turn.cost_usd if isinstance(turn.cost_usd, float) else 0.0
    turn_cost = None if cost is None else so_far + cost
    turn = TurnUsage(
        input_tokens=turn.input_tokens + prompt,
        output_tokens=turn.output_tokens + completion,
        context_tokens=prompt,
        context_window_tokens=window,
        cached_input_tokens=turn.cached_input_tokens + (cached or 0),
        cache_write_tokens=turn.cache_write_tokens + (written or 0),
        cost_usd=cents(turn_cost) if turn_cost is not None else turn.cost_usd,
    )
    total_cost = cents(totals.cost_usd)
    update = u.Usage(
        context_tokens=prompt,
        context_window_tokens=window,
        input_tokens=prompt,
        output_tokens=completion,
        cached_input_tokens=cached,
        cache_write_tokens=written,
        cost_usd=cents(cost),
        totals=u.TokenTotals(
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            cached_input_tokens=totals.cached_input_tokens,
            cache_write_tokens=totals.cache_write_tokens,
            cost_usd=msgspec.UNSET if total_cost is None else total_cost,
        ),
        budget_source=budget.source if budget else None,
        budget_tokens=budget.tokens if budget and budget.source == "config" else None,
    )
    event = {key: value for key, value in msgspec.to_builtins(update).items() if key not in ("kind", "totals")}
    return CallUsage(turn, update, event)


def add_usage(totals: TurnTotals, event: dict[str, Any]) -> None:
    """Add one stored ``usage`` event's figures to ``totals`` (a subagent's call, to its parent's; B-SUB-1)."""
    totals.input_tokens += event.get("inputTokens") or 0
    totals.output_tokens += event.get("outputTokens") or 0
    totals.cached_input_tokens += event.get("cachedInputTokens") or 0
    totals.cache_write_tokens += event.get("cacheWriteTokens") or 0
    if (cost := event.get("costUsd")) is not None:
        totals.cost_usd = (totals.cost_usd or 0.0) + cost


@overload
def cents(usd: float) -> float: ...
@overload
def cents(usd: None) -> None: ...
def cents(usd: float | None) -> float | None:
    """Money on the wire to a millionth of a dollar: enough for one cheap call, without float noise."""
    return None if usd is None else round(usd, 6)


async def load_totals(store: Store, session_id: str) -> TurnTotals:
    """What the session's stored ``usage`` events add up to (the same sums ``listSessions`` reports)."""
    stored = (await store.usage_totals([session_id])).get(session_id)
    if not stored:
        return TurnTotals()
    return TurnTotals(
        input_tokens=stored["inputTokens"],
        output_tokens=stored["outputTokens"],
        cached_input_tokens=stored["cachedInputTokens"],
        cache_write_tokens=stored["cacheWriteTokens"],
        cost_usd=stored["costUsd"],
    )
