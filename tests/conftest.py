"""Shared fixtures: a temp ``THREADLINE_HOME``, a real server subprocess behind ``server.cli.client.Client``, and a
raw-bytes connection for framing tests.

Nothing here mocks our code: every server is ``python -m server`` talking JSON-RPC over stdio to a real SQLite file.

Loop scopes: ``home``/``rpc``/``raw`` are per test (function loop, the default). ``module_home``/``module_rpc``/
``module_raw`` share one server per test module; modules using them set
``pytestmark = pytest.mark.asyncio(loop_scope="module")`` so the tests run on the loop the client lives on.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from server.cli.client import Client

pytest_plugins = ["tests.fakes.plugin"]

REPO = Path(__file__).resolve().parent.parent
TRAJECTORIES = REPO.parent / "shared" / "data" / "trajectories"  # shared/ sits beside the clone, in CI too
KIMI = TRAJECTORIES / "kimi-cli-entire__29_77bc73228c_1__full.json"  # 211 messages, zh + en
MINI_SWE = TRAJECTORIES / "mini-swe-agent-pr816__deepseek_chat_dev_rerun__pylint-dev__astroid-1333.json"  # 378


def load_trajectory(path: Path) -> list[dict[str, Any]]:
    """A real recorded conversation (read-only input; derive variants in code)."""
    return json.loads(path.read_text(encoding="utf-8"))


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a server on ``home``, with no provider settings leaking in from the caller's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    return {**env, "THREADLINE_HOME": str(home), **extra}


async def spawn_client(home: Path, **env: str) -> Client:
    """An initialized client of a fresh ``python -m server`` on ``home``."""
    return await Client.spawn(env=server_env(home, **env), cwd=str(REPO))


# --- raw connection ---------------------------------------------------------------------------------------


class RawConnection:
    """Bytes in, decoded messages out, with nothing smoothed over: for framing and wire-shape tests.

    Every message the server writes is kept in ``received`` so a test can check all of them.
    """

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.received: list[dict[str, Any]] = []
        self._next_id = 1000

    @classmethod
    async def spawn(cls, home: Path, *, initialize: bool = True, **env: str) -> RawConnection:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "server", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=server_env(home, **env), cwd=str(REPO), limit=1 << 24)
        conn = cls(proc)
        if initialize:
            reply = await conn.call("initialize", {"processId": os.getpid(), "capabilities": {}, "rootUri": None})
            assert "result" in reply, reply
            conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return conn

    def send_bytes(self, body: bytes, header: bytes | None = None) -> None:
        """``body`` framed with a correct ``Content-Length`` unless ``header`` replaces the header block."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(header if header is not None else b"Content-Length: %d\r\n\r\n" % len(body))
        self.proc.stdin.write(body)

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps(message).encode())

    def request(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """The whole response message (``result`` or ``error``) to one request."""
        return await self.reply(self.request(method, params))

    async def receive(self, timeout: float = 15) -> dict[str, Any]:
        out = self.proc.stdout
        assert out is not None
        length = None
        async with asyncio.timeout(timeout):
            while True:
                line = await out.readline()
                if not line:
                    raise EOFError("the server closed its stdout")
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None, "a frame without Content-Length"
            message = json.loads(await out.readexactly(length))
        self.received.append(message)
        return message

    async def reply(self, msg_id: Any, timeout: float = 15) -> dict[str, Any]:
        """The next response with ``id == msg_id`` (``None`` for framing errors); notifications are skipped."""
        while True:
            message = await self.receive(timeout)
            if "method" not in message and message.get("id") == msg_id:
                return message

    async def close(self) -> int:
        if self.proc.returncode is None:
            try:
                await self.call("shutdown", None)
                self.send({"jsonrpc": "2.0", "method": "exit"})
                self.proc.stdin.close()
                async with asyncio.timeout(10):
                    await self.proc.wait()
            except (TimeoutError, EOFError, ConnectionError):
                self.proc.kill()
                await self.proc.wait()
        return self.proc.returncode


# --- fixtures ---------------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh, empty THREADLINE_HOME."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An existing folder to use as a session's cwd."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest_asyncio.fixture
async def rpc(home: Path) -> AsyncIterator[Client]:
    client = await spawn_client(home)
    yield client
    await client.close()


@pytest_asyncio.fixture
async def raw(home: Path) -> AsyncIterator[RawConnection]:
    conn = await RawConnection.spawn(home)
    yield conn
    await conn.close()


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def module_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("work")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_rpc(module_home: Path) -> AsyncIterator[Client]:
    """One server for the whole module; tests must not depend on each other's sessions."""
    client = await spawn_client(module_home)
    yield client
    await client.close()
