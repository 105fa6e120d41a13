"""The one test harness: a real server over stdio (its stderr kept in a log and shown when a test fails), a
workspace folder, the model-service double, and one JSON-RPC framing client for raw-bytes tests.

Registered as a pytest plugin by ``tests/conftest.py``, so its fixtures (``home``, ``folder``, ``rpc``, ``raw``
and their module-scoped twins) and its failure report are available everywhere under ``tests/``. Nothing here
mocks our code: every server is ``python -m server`` (or a subcommand) on a real SQLite file, and the doubles are
real HTTP servers speaking the provider's protocol.

Loop scopes: ``home``/``rpc``/``raw`` are per test (function loop, the default). ``module_home``/``module_rpc``
share one server per test module; modules using them set ``pytestmark = pytest.mark.asyncio(loop_scope="module")``
so the tests run on the loop the client lives on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

import pytest
import pytest_asyncio

from server.cli.client import Client
from server.sandbox.runner import support as sandbox_support
from tests.fakes import fake_anthropic, fake_responses
from tests.fakes.fake_provider import FakeProvider

REPO = Path(__file__).resolve().parent.parent
API_KEY = "sk-threadline-e2e-SECRET-5f1c9a"  # what the doubles require and the servers are given
MODEL = "fake-model"
LIMIT = 1 << 24  # stream reader limit: the server's frames can be large

# --- the model double ----------------------------------------------------------------------------------------

PROVIDER = os.environ.get("THREADLINE_PROVIDER") or "openai"  # the provider kind the agent-loop tests run against
# Per kind: the double, the path its model calls arrive on, and how a request reads as Chat Completions messages.
KINDS: dict[str, tuple[type, str, Callable[[dict[str, Any]], list[dict[str, Any]]]]] = {
    "openai": (FakeProvider, "/v1/chat", lambda body: body["messages"]),
    "anthropic": (fake_anthropic.FakeAnthropic, "/v1/messages", fake_anthropic.openai_messages),
    "openai-responses": (fake_responses.FakeResponses, "/v1/responses", fake_responses.openai_messages),
}
NATIVE_OPTIONS = ("api_key", "context_window")  # what the native doubles take (the rest is Chat Completions')


def new_fake(**options: Any) -> Any:
    """The double for ``PROVIDER``: FakeProvider with every option, a native double with those it knows."""
    fake_class = KINDS[PROVIDER][0]
    if PROVIDER != "openai":
        options = {k: v for k, v in options.items() if k in NATIVE_OPTIONS}
    return fake_class(**options)


def kind_of(fake: Any) -> str:
    """The provider kind a double speaks (a test module may start any double, whatever PROVIDER says)."""
    return next(kind for kind, (fake_class, _, _) in KINDS.items() if isinstance(fake, fake_class))


# --- starting a server ---------------------------------------------------------------------------------------


def server_env(home: Path, fake_url: str | None = None, **extra: str) -> dict[str, str]:
    """Environment for a server on ``home``, with no ``THREADLINE_*`` setting leaking in from the caller's shell;
    with ``fake_url`` it talks to that double (model ``MODEL``, key ``API_KEY``). ``extra`` overrides any of it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    env["THREADLINE_HOME"] = str(home)
    if not sandbox_support().enforced:
        # A machine without the OS sandbox (no Landlock, or user namespaces restricted, as on Ubuntu 24.04 CI
        # runners) would make every command ask (B-SBX-2): the tests not about the sandbox run without it there,
        # and tests/sandbox skips, saying why.
        env["THREADLINE_SANDBOX"] = "off"
    if fake_url:
        env.update(THREADLINE_BASE_URL=fake_url, THREADLINE_MODEL=MODEL, THREADLINE_API_KEY=API_KEY)
    return {**env, **extra}


def log_path(home: Path) -> Path:
    """Where the server on ``home`` writes its stderr (beside the folder, so a test can grep it)."""
    return home.parent / f"{home.name}.log"


# Every server log of this session with the process that writes it: shown when a test fails while it runs.
_LOGS: list[tuple[Path, Callable[[], bool]]] = []
_FIRST_OF_TEST = 0  # index in _LOGS of the first log opened by the current test


def watch_log(path: Path, running: Callable[[], bool]) -> Path:
    """Show ``path`` in the report of a failing test that started it or ran while ``running()``."""
    _LOGS.append((path, running))
    return path


async def start_server(
    home: Path,
    *args: str,
    env: dict[str, str],
    stdout: int | None = asyncio.subprocess.PIPE,
    stdin: int | None = asyncio.subprocess.PIPE,
) -> asyncio.subprocess.Process:
    """``python -m server *args`` from the repo, stderr appended to ``log_path(home)``."""
    path = log_path(home)
    with open(path, "ab") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "server",
            *args,
            stdin=stdin,
            stdout=stdout,
            stderr=err,
            env=env,
            cwd=str(REPO),
            limit=LIMIT,
        )
    watch_log(path, lambda: proc.returncode is None)
    return proc


def popen_server(home: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``start_server`` with blocking pipes, for sync tests (hypothesis runs plain functions)."""
    path = log_path(home)
    with open(path, "ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            cwd=REPO,
        )
    watch_log(path, lambda: proc.poll() is None)
    return proc


async def initialize(client: Client, options: dict[str, Any] | None = None, timeout: float = 120) -> Client:
    """The LSP handshake: ``initialize`` (its result kept on the client), then ``initialized``."""
    client.initialize_result = await asyncio.wait_for(
        client.request(
            "initialize",
            {"processId": os.getpid(), "capabilities": {}, "rootUri": None, "initializationOptions": options or {}},
        ),
        timeout,
    )
    client.notify("initialized", {})
    return client


async def start_client(
    home: Path,
    fake_url: str | None = None,
    *,
    args: tuple[str, ...] = (),
    options: dict[str, Any] | None = None,
    **env: str,
) -> Client:
    """An initialized ``Client`` of a fresh server on ``home`` (``args``: subcommand and flags)."""
    proc = await start_server(home, *args, env=server_env(home, fake_url, **env))
    return await initialize(Client(proc), options)


class Closable(Protocol):
    async def close(self) -> Any: ...


ClosableT = TypeVar("ClosableT", bound=Closable)


@contextlib.asynccontextmanager
async def closing(starting: Awaitable[ClosableT]) -> AsyncIterator[ClosableT]:
    """What ``starting`` starts (a client, an agent), for the block; closed (so its server stopped) when it ends."""
    started = await starting
    try:
        yield started
    finally:
        await started.close()


def running_client(
    home: Path, fake_url: str | None = None, **kwargs: Any
) -> contextlib.AbstractAsyncContextManager[Client]:
    """``start_client`` for the block (see ``closing``)."""
    return closing(start_client(home, fake_url, **kwargs))


# --- the framing client --------------------------------------------------------------------------------------


def frame(body: bytes) -> bytes:
    """``body`` with a correct ``Content-Length`` header."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def header_length(line: bytes, length: int | None) -> int | None:
    """The frame length so far after one header line (other headers leave it as it was)."""
    name, _, value = line.decode("ascii").partition(":")
    return int(value) if name.strip().lower() == "content-length" else length


def read_frame(stream: IO[bytes]) -> dict[str, Any] | None:
    """The next message from a blocking byte stream, or None at end of stream."""
    length = None
    while (line := stream.readline()) not in (b"\r\n", b"\n"):
        if not line:
            return None
        length = header_length(line, length)
    assert length is not None, "a frame without Content-Length"
    return json.loads(stream.read(length))


class RawConnection:
    """Bytes in, decoded messages out, with nothing smoothed over: for framing and wire-shape tests, over a
    server's stdio (``spawn``) or a TCP socket (``open``).

    Every message the server writes is kept in ``received`` so a test can check all of them.
    """

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proc: asyncio.subprocess.Process | None = None
    ):
        self.reader, self.writer, self.proc = reader, writer, proc
        self.received: list[dict[str, Any]] = []
        self._next_id = 1000

    @classmethod
    async def spawn(cls, home: Path, *, initialize: bool = True, **env: str) -> RawConnection:
        proc = await start_server(home, env=server_env(home, **env))
        assert proc.stdout is not None and proc.stdin is not None
        conn = cls(proc.stdout, proc.stdin, proc)
        if initialize:
            reply = await conn.call("initialize", {"processId": os.getpid(), "capabilities": {}, "rootUri": None})
            assert "result" in reply, reply
            conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return conn

    @classmethod
    async def open(cls, port: int) -> RawConnection:
        """A connection to ``threadline serve --tcp`` on 127.0.0.1."""
        return cls(*await asyncio.open_connection("127.0.0.1", port, limit=LIMIT))

    def send_bytes(self, body: bytes, header: bytes | None = None) -> None:
        """``body`` framed with a correct ``Content-Length`` unless ``header`` replaces the header block."""
        self.writer.write(frame(body) if header is None else header + body)

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
        """The next message; EOFError when the server closed its end instead."""
        length = None
        async with asyncio.timeout(timeout):
            while (line := await self._readline()) not in (b"\r\n", b"\n"):
                if not line:
                    raise EOFError("the server closed the connection")
                length = header_length(line, length)
            assert length is not None, "a frame without Content-Length"
            message = json.loads(await self.reader.readexactly(length))
        self.received.append(message)
        return message

    async def _readline(self) -> bytes:
        try:
            return await self.reader.readline()
        except ConnectionResetError:  # the server closed first and our unread bytes made the kernel reset
            return b""

    async def reply(self, msg_id: Any, timeout: float = 15) -> dict[str, Any]:
        """The next response with ``id == msg_id`` (``None`` for framing errors); notifications are skipped."""
        while True:
            message = await self.receive(timeout)
            if "method" not in message and message.get("id") == msg_id:
                return message

    async def close(self) -> int | None:
        """Shut the server down politely (killing it if it does not go); a TCP connection is just closed."""
        if self.proc is None:
            self.writer.close()
            return None
        if self.proc.returncode is None:
            try:
                await self.call("shutdown", None)
                self.send({"jsonrpc": "2.0", "method": "exit"})
                self.writer.close()
                async with asyncio.timeout(10):
                    await self.proc.wait()
            except (TimeoutError, EOFError, ConnectionError):
                self.proc.kill()
                await self.proc.wait()
        return self.proc.returncode


# --- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh, empty THREADLINE_HOME."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An empty workspace folder to use as a session's cwd (a module needing files overrides it on top)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest_asyncio.fixture
async def rpc(home: Path) -> AsyncIterator[Client]:
    client = await start_client(home)
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
def module_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_rpc(module_home: Path) -> AsyncIterator[Client]:
    """One server for the whole module; tests must not depend on each other's sessions."""
    client = await start_client(module_home)
    yield client
    await client.close()


# --- the failure report --------------------------------------------------------------------------------------


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    global _FIRST_OF_TEST
    _FIRST_OF_TEST = len(_LOGS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test's report carries the tail of each server log it started or that ran during it."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]  # pluggy's hookwrapper outcome
    if not report.failed:
        return
    shown: set[Path] = set()
    for index, (path, running) in enumerate(_LOGS):
        if path in shown or not (index >= _FIRST_OF_TEST or running()) or not path.exists():
            continue
        shown.add(path)
        text = path.read_bytes()[-8000:].decode("utf-8", "replace")
        report.sections.append((f"server stderr ({path})", text or "(empty)"))
