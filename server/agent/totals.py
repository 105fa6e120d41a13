"""A session's running usage totals, summed from its stored ``usage`` events (B-CACHE-5) when first needed, so
they survive a restart and a session dropped from memory (``server.sessions``) comes back with them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.agent.loop import TurnTotals

if TYPE_CHECKING:
    from server.transcript import Store

USAGE_EVENT = "usage"


async def load_totals(store: Store, session_id: str) -> TurnTotals:
    totals = TurnTotals()
    for event in await store.list_events(session_id, USAGE_EVENT):
        call = event.payload
        totals.input_tokens += int(call.get("inputTokens") or 0)
        totals.output_tokens += int(call.get("outputTokens") or 0)
        totals.cached_input_tokens += int(call.get("cachedInputTokens") or 0)
        totals.cache_write_tokens += int(call.get("cacheWriteTokens") or 0)
        if isinstance(call.get("costUsd"), (int, float)):
            totals.cost_usd = (totals.cost_usd or 0.0) + call["costUsd"]
    return totals
