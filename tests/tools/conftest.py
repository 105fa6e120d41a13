"""A real tool context: a temp session folder, a real SQLite store and artifact folder under a temp home."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from server.artifacts import ArtifactStore
from server.config import Settings
from server.context import estimate_message_tokens
from server.tools import ToolContext
from server.transcript import Store


@pytest_asyncio.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ToolContext]:
    home, folder = tmp_path / "home", tmp_path / "project"
    folder.mkdir()
    settings = Settings(home=home, command_timeout_seconds=20)
    store = await Store.open(settings.database_path, estimate=estimate_message_tokens)
    session = await store.create_session(str(folder))
    try:
        yield ToolContext(
            session.id,
            "turn_test",
            folder,
            settings.tool_settings(),
            store,
            ArtifactStore(settings.artifacts_dir, store),
            secrets=("sk-test-secret",),
        )
    finally:
        await store.close()
