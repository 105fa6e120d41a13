"""A session's running usage totals, summed from its stored ``usage`` events (B-CACHE-5) when first needed, so
they survive a restart and a session dropped from memory (``server.sessions``) comes back with them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.agent.loop import TurnTotals

if TYPE_CHECKING:
    from server.transcript import Store

USAGE_EVENT = "usage"


async def load_totals(store: Store, session_id: str) -> TurnTotals:
    """What the session's stored ``usage`` events add up to (the same sums ``listSessions`` reports)."""
    stored = (await store.usage_totals([session_id])).get(session_id)
    if not stored:
        return TurnTotals()
    return TurnTotals(input_tokens=stored["inputTokens"], output_tokens=stored["outputTokens"],
                      cached_input_tokens=stored["cachedInputTokens"], cache_write_tokens=stored["cacheWriteTokens"],
                      cost_usd=stored["costUsd"])
