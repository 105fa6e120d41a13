"""pytest fixtures for the model-service double. Register with `pytest_plugins = ["tests.fakes.plugin"]`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fakes.fake_provider import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A started fake with no key, no window and no model allow-list; echoes when its script is empty."""
    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def fake_provider_factory() -> Iterator[Callable[..., FakeProvider]]:
    """Start fakes configured like a particular provider: `fake_provider_factory(api_key="k", ...)`."""
    started: list[FakeProvider] = []

    def start(**options: Any) -> FakeProvider:
        fake = FakeProvider(**options).start()
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.stop()
