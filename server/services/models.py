"""The models use case: which provider a session's model is, with its window and price, and ``listModels``."""

from __future__ import annotations

from typing import Any, Protocol

from protocol.messages import ListModelsResult, ModelInfo, ModelPrice
from server.agent.approvals import approval_policy
from server.agent.models import budget_of, price_of, provider_settings, window_of
from server.agent.ports import ModelChoice
from server.config import ProviderSettings, Settings
from server.context import ViewSettings
from server.providers import ChatProvider
from server.providers.capabilities import Price
from server.providers.kinds import PROVIDER_KINDS
from server.services.needs import CoreModels, CoreStore
from server.transcript import StoredSession


class ModelsNeeds(CoreStore, CoreModels, Protocol):
    """What the model use cases use of the ``Core``."""


def context_window(settings: Settings, session: StoredSession | None = None) -> int:
    return window_of(provider_settings(settings, session))


def view_settings(
    settings: Settings,
    session: StoredSession | None = None,
    window: int | None = None,
    ratio: float | None = None,
    keep: int | None = None,
) -> ViewSettings:
    """The pipeline's settings for ``session``'s model (its window), with a client's overrides."""
    return ViewSettings(
        window or context_window(settings, session),
        ratio if ratio is not None else settings.threshold_ratio,
        keep if keep is not None else settings.keep_recent_tokens,
        settings.compact_target_ratio,
        budget_of(settings, provider_settings(settings, session)),
    )


async def choose_model(core: ModelsNeeds, session_id: str) -> ModelChoice | None:
    """Before each model call: the session's model and approval policy as stored now, so ``updateSession``
    applies from the next call (the view is built for the new model's window). None: nothing configured."""
    session = await core.store.get_session(session_id)
    provider = core.models.provider(core.settings, session)
    if provider is None:
        return None
    return ModelChoice(
        provider,
        view_settings(core.settings, session),
        core.models.price(core.settings, session),
        approval_policy(session.approval_policy, core.settings.approval_policy),
    )


class LiveModels:
    """The live providers: one client per distinct configuration of a session's model, built on first use."""

    def __init__(self) -> None:
        self._built: dict[tuple[Any, ...], Any] = {}  # ChatProviders, each with an aclose()

    def provider(self, settings: Settings, session: StoredSession | None) -> ChatProvider | None:
        p = provider_settings(settings, session)
        if not p.configured:
            return None
        key = (p.kind, p.base_url, p.api_key, p.model, p.max_output_tokens, p.thinking_budget_tokens)
        if key not in self._built:
            self._built[key] = new_provider(p, settings.provider_read_timeout_seconds)
        provider: ChatProvider = self._built[key]
        return provider

    def price(self, settings: Settings, session: StoredSession | None) -> Price | None:
        return price_of(provider_settings(settings, session))

    async def aclose(self) -> None:
        for provider in self._built.values():
            await provider.aclose()


def new_provider(p: ProviderSettings, read_timeout: float) -> ChatProvider:
    """The ChatProvider for ``[provider] kind``: its row in ``server.providers.kinds`` builds it."""
    assert p.base_url and p.model
    build = (PROVIDER_KINDS.get(p.kind) or PROVIDER_KINDS["openai"]).build
    return build(p.base_url, p.api_key, p.model, read_timeout, p.max_output_tokens, p.thinking_budget_tokens)


def list_models(settings: Settings) -> ListModelsResult:
    """``listModels``: the configured ``[models.NAME]`` and the default provider, with windows and prices."""
    default = settings.provider
    return ListModelsResult(
        models=[model_info(name, p) for name, p in settings.models.items()],
        default=model_info(None, default) if default.configured else None,
    )


def model_info(name: str | None, p: ProviderSettings) -> ModelInfo:
    price = price_of(p)
    return ModelInfo(
        name=name,
        provider=p.kind,
        model=p.model or "",
        context_window_tokens=window_of(p),
        price=ModelPrice(
            input=price.input, output=price.output, cached_input=price.cached_input, cache_write=price.cache_write
        )
        if price
        else None,
    )


def session_policy(settings: Settings, session: StoredSession) -> str:
    """The approval policy a session runs under: its own, else the configured default."""
    return approval_policy(session.approval_policy, settings.approval_policy)


def describe_provider(p: ProviderSettings) -> str:
    """A provider in a line: model, kind, window and, when known, price (a model picker's description)."""
    price = price_of(p)
    cost = f", ${price.input:g}/${price.output:g} per Mtok in/out" if price else ""
    return f"{p.model} ({p.kind}), {window_of(p):,}-token window{cost}"
