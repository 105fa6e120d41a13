"""What the daemon tests share: a home the daemon runs on, real ``threadline connect`` bridges as clients, and the
daemon's process found through its lock file (B-DAEMON-1, docs/DAEMON.md).

Nothing is faked but the model service: each client is ``python -m server connect`` spawned as an editor would,
the daemon is the process that bridge starts, and the store is real SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from server.cli.client import Client
from tests.harness import API_KEY, REPO, log_path, new_fake, server_env, watch_log

BRIDGE = [sys.executable, "-m", "server", "connect"]


def open_home_fixture() -> Any:
    """An ``open_home`` fixture: a home under a folder every user may traverse (``setpriv`` tests run a client as
    another uid), removed after the test, its daemon stopped first."""

    @pytest.fixture
    def open_home() -> Iterator[Path]:
        yield from _open_home()

    return open_home


def fake_fixture() -> Any:
    """A ``fake`` fixture: the model double for ``PROVIDER``, requiring ``API_KEY``."""

    @pytest.fixture
    def fake() -> Iterator[Any]:
        with new_fake(api_key=API_KEY) as double:
            yield double

    return fake


def _open_home() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="tl-daemon-"))
    os.chmod(base, 0o755)
    home = base / "home"
    home.mkdir()
    os.chmod(home, 0o755)
    watch_log(home / "logs" / "daemon.log", lambda: daemon_pid(home) is not None)
    try:
        yield home
    finally:
        stop_daemon(home)
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def daemon_env(home: Path, fake: Any, **extra: str) -> dict[str, str]:
    return server_env(home, fake.url, **extra)


async def bridge(env: dict[str, str], home: Path, **initialization: Any) -> Client:
    """A client speaking to the daemon through a real ``threadline connect`` (which starts it when none runs)."""
    with open(log_path(home), "ab") as err:
        return await asyncio.wait_for(
            Client.spawn(
                env=env, args=BRIDGE, cwd=str(REPO), stderr=err, initialization_options=initialization or None
            ),
            120,
        )


@contextlib.asynccontextmanager
async def bridged(env: dict[str, str], home: Path) -> AsyncIterator[Client]:
    client = await bridge(env, home)
    try:
        yield client
    finally:
        await client.close()


def daemon_pid(home: Path) -> int | None:
    """The pid written in the lock by the daemon holding it, if that process is alive."""
    try:
        pid = int((home / "daemon" / "lock").read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    if not pid:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return _not_zombie(pid)


def _not_zombie(pid: int) -> int | None:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    return None if state == "Z" else pid


def wait_gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _not_zombie(pid) is None:
            return True
        time.sleep(0.05)
    return False


def stop_daemon(home: Path) -> None:
    pid = daemon_pid(home)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not wait_gone(pid, 30):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_gone(pid, 10)


async def wait_for(predicate: Callable[[], Any], timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


async def wait_until(check: Callable[[], Any], timeout: float = 30, what: str = "condition") -> Any:
    """Poll an async ``check`` until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


def session_updates(client: Client, sid: str) -> list[dict[str, Any]]:
    return [p for m, p in list(client.notifications) if m == "sessionUpdate" and p["sessionId"] == sid]


def kinds(updates: list[dict[str, Any]]) -> list[str]:
    return [u["update"]["kind"] for u in updates]


async def listed(client: Client, sid: str) -> dict[str, Any]:
    sessions = (await client.request("listSessions", {"limit": 100}))["sessions"]
    return next(s for s in sessions if s["sessionId"] == sid)


async def never_answer(method: str, params: Any) -> Any:
    """A client that shows the question and does not answer (a person away from the keyboard)."""
    return await asyncio.get_running_loop().create_future()


def write_call(call_id: str, path: str, content: str = "x\n") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "write_file", "arguments": {"path": path, "content": content}}]}
