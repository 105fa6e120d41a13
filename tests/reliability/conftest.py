from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_provider import FakeProvider


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key="sk-reliability-SECRET-7d2e91c4") as provider:
        yield provider
