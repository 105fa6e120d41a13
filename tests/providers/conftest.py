"""`fake_provider` and `fake_provider_factory` come from tests/fakes/plugin.py, registered in tests/conftest.py."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest_asyncio

from server.providers import OpenAICompatibleProvider

# Building a TLS context costs ~0.1 s per client; the fake is plain HTTP, so share one.
_TLS = ssl.create_default_context()


@pytest_asyncio.fixture
async def make_provider(fake_provider) -> AsyncIterator[Callable[..., OpenAICompatibleProvider]]:
    """Providers pointed at the fake (or `url`), with tiny backoffs so retry tests stay fast."""
    made: list[OpenAICompatibleProvider] = []
    clients: list[httpx.AsyncClient] = []

    def make(
        url: str | None = None,
        api_key: str | None = None,
        model: str = "fake-model",
        *,
        own_client: bool = False,
        **options: Any,
    ) -> OpenAICompatibleProvider:
        """`own_client=True` lets the provider build its own httpx client, as production does."""
        options.setdefault("backoff_base", 0.01)
        options.setdefault("backoff_max", 0.05)
        if not own_client:
            clients.append(httpx.AsyncClient(verify=_TLS))
            options["client"] = clients[-1]
        provider = OpenAICompatibleProvider(url or fake_provider.url, api_key, model, **options)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()
    for client in clients:
        await client.aclose()
