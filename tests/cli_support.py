"""The installed ``threadline`` command run as a real process against the model double: what the command-line
tests (tests/cli, tests/e2e, tests/sandbox) share.

A module shares one double (``fake = fake_fixture()``); each test gets a fresh home (the harness's ``home``) and
an ``env`` for it (``env = env_fixture()``), in which the double's script is reset. Nothing here stands in for our
code: ``threadline`` is the entry point installed in the venv, run as a child process with that environment.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import API_KEY, REPO, kind_of, new_fake, server_env

THREADLINE = REPO / ".venv" / "bin" / "threadline"
WINDOW = "64000"  # the context window the commands are given: the meters the tests read say "/64k"


def command_env(fake: Any, home: Path, **extra: str) -> dict[str, str]:
    """The environment a command on ``home`` talks to ``fake`` with (its kind, a 64k window); the double's script
    and records are reset first, so a test sees only its own model calls."""
    fake.reset()
    return server_env(home, fake.url, THREADLINE_CONTEXT_WINDOW=WINDOW, THREADLINE_PROVIDER=kind_of(fake), **extra)


def threadline(
    env: dict[str, str], *args: str, stdin: str | int | None = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``threadline ARGS`` to its end; ``stdin`` is the text it reads, or a file descriptor such as DEVNULL."""
    feed: dict[str, Any] = {"input": stdin} if isinstance(stdin, str) else {"stdin": stdin}
    return subprocess.run(
        [str(THREADLINE), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout, **feed
    )


def fake_fixture():
    """A module-scoped ``fake``: the double for ``PROVIDER``, requiring ``API_KEY``."""

    @pytest.fixture(scope="module")
    def fake() -> Iterator[Any]:
        with new_fake(api_key=API_KEY) as double:
            yield double

    return fake


def env_fixture():
    """An ``env`` fixture: ``command_env`` for the module's ``fake`` and the test's ``home``."""

    @pytest.fixture
    def env(fake: Any, home: Path) -> dict[str, str]:
        return command_env(fake, home)

    return env
