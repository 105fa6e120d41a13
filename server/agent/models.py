"""Which model a session talks to: a ``[models.NAME]`` from config.toml, or the server's default ``[provider]``.

A session stores only the name (``sessions.model``); what the name points at (kind, server, window, price) is
read from the settings at each model call, so ``updateSession`` applies from the next call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from server.config import ProviderSettings, Settings
from server.context.budget import (
    ANTHROPIC_PRICES,
    LOCAL_PRICES,
    OPENAI_PRICES,
    PLANNING_WINDOW_TOKENS,
    Budget,
    CachePrices,
)
from server.errors import ModelNotFound
from server.providers import DEFAULT_CONTEXT_WINDOW, context_window_for
from server.providers.capabilities import Price, price_for
from server.transcript import StoredSession

if TYPE_CHECKING:
    from server.providers import ChatProvider


class ModelSource(Protocol):
    """Where a server's turns get their model, chosen once when the server starts: the live providers the
    settings name (``server.services.models.LiveModels``) or a recording (``server.replay.ReplayModels``). Whether
    tools run is not its business (``Core.recorded_tools``)."""

    def provider(self, settings: Settings, session: StoredSession | None) -> ChatProvider | None:
        """The provider for ``session``'s model; None when nothing is configured."""

    def price(self, settings: Settings, session: StoredSession | None) -> Price | None: ...

    async def aclose(self) -> None: ...


def model_not_found(name: str, settings: Settings) -> ModelNotFound:
    known = ", ".join(sorted(settings.models)) or "none are configured ([models.NAME] in config.toml)"
    return ModelNotFound(f"unknown model {name!r}; configured models: {known}")


def checked_model_name(settings: Settings, name: str | None) -> str | None:
    """``name`` when it is a configured model (or None: the default provider), else ModelNotFound."""
    if name is not None and name not in settings.models:
        raise model_not_found(name, settings)
    return name


def provider_settings(settings: Settings, session: StoredSession | None) -> ProviderSettings:
    """The provider settings of ``session``'s model. A stored name no longer in config is ModelNotFound
    (the session is not silently moved to another model, which might cost more or see less)."""
    name = session.model if session is not None else None
    if name is None:
        return settings.provider
    if name not in settings.models:
        raise model_not_found(name, settings)
    return settings.models[name]


def window_of(p: ProviderSettings) -> int:
    """R-PIPE-3: the configured window, else the table's for the model, else the default."""
    return p.context_window_tokens or (context_window_for(p.model) if p.model else None) or DEFAULT_CONTEXT_WINDOW


def price_of(p: ProviderSettings) -> Price | None:
    """The configured price when set, else the table's list price for the model, else None (no cost shown)."""
    return p.price or (price_for(p.model) if p.model else None)


def cache_prices(p: ProviderSettings) -> CachePrices:
    """B-BUDGET-1: the prompt cache's read and write prices as shares of an uncached input token: from the
    configured or listed price of the model when there is one, else by the provider's kind; a local server's
    (prompt-processing time) when it is one and no price says otherwise."""
    price = price_of(p)
    if price is not None and price.input > 0:
        read = price.input if price.cached_input is None else price.cached_input
        write = price.input if price.cache_write is None else price.cache_write
        return CachePrices(read / price.input, write / price.input, f"{p.model or 'the model'}'s price")
    if p.kind == "anthropic":
        return ANTHROPIC_PRICES
    host = urlsplit(p.base_url or "").hostname or ""
    if host in ("localhost", "127.0.0.1", "::1") or host.endswith(".local"):
        return LOCAL_PRICES
    return OPENAI_PRICES


def budget_of(settings: Settings, p: ProviderSettings) -> Budget:
    """The context budget a session's requests are planned against (B-BUDGET-1): ``[context]``'s, priced by the
    session's model."""
    budget = settings.context_budget
    planning = max(PLANNING_WINDOW_TOKENS, budget) if budget else PLANNING_WINDOW_TOKENS  # a larger budget: its own
    return Budget(budget, settings.keep_recent_outputs, settings.clear_at_least, cache_prices(p), planning)
