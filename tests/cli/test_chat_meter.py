"""``threadline chat``'s context meter shows the cached share of the last request's input (B-CACHE-5)."""

from __future__ import annotations

import io

from server.cli.chat import Printer, cached_share


def meter(update: dict) -> str:
    out = io.StringIO()
    Printer(out).update({"kind": "usage", **update})
    return out.getvalue()


def test_B_CACHE_5_the_meter_shows_the_cached_share_of_the_last_request():
    line = meter(
        {
            "contextTokens": 1234,
            "contextWindowTokens": 64000,
            "inputTokens": 1234,
            "outputTokens": 5,
            "cachedInputTokens": 520,
            "totals": {"inputTokens": 5000, "cachedInputTokens": 4000},
        }
    )
    assert line == "context 1.2k/64k tokens · 42% cached\n"


def test_B_CACHE_5_no_share_when_the_provider_reports_no_cache_figure():
    assert meter({"contextTokens": 512, "contextWindowTokens": 64000, "inputTokens": 512}) == "context 512/64k tokens\n"
    assert cached_share({"inputTokens": 0, "cachedInputTokens": 0}) is None
    assert cached_share({"inputTokens": 10, "cachedInputTokens": 0}) == "0% cached"
    assert cached_share({"inputTokens": 1000, "cachedInputTokens": 999}) == "99% cached"
    assert cached_share({"inputTokens": 10, "cachedInputTokens": 10}) == "100% cached"


def test_the_meter_shows_the_call_and_session_cost_only_when_a_price_is_known():
    line = meter(
        {
            "contextTokens": 1500,
            "contextWindowTokens": 200000,
            "inputTokens": 1500,
            "cachedInputTokens": 1400,
            "costUsd": 0.001003,
            "totals": {"inputTokens": 2900, "costUsd": 0.006302},
        }
    )
    assert line == "context 1.5k/200k tokens · 93% cached · $0.0010 (session $0.0063)\n"
    assert "$" not in meter({"contextTokens": 512, "contextWindowTokens": 64000, "inputTokens": 512})


def test_B_BUDGET_1_the_meter_shows_the_budget_beside_the_window():
    base = {"contextTokens": 12_700, "contextWindowTokens": 1_000_000, "inputTokens": 12_700}
    assert meter({**base, "budgetSource": "auto"}) == "context 12.7k/1000k tokens · budget auto\n"
    assert meter({**base, "budgetSource": "config", "budgetTokens": 60_000}) == (
        "context 12.7k/1000k tokens · budget 60k\n"
    )
