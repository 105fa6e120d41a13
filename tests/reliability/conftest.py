from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    """The model-service double, requiring the key the servers here are given (so a missing key fails)."""
    with FakeProvider(api_key=API_KEY) as provider:
        yield provider
