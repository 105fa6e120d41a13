"""TCP mode: ``threadline serve --tcp`` listens on 127.0.0.1 only, writes a 0600 token into the data folder, and
refuses any client without it before a single method runs."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.harness import RawConnection, server_env, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tcp_server(tmp_path_factory) -> AsyncIterator[tuple[int, Path]]:
    home = tmp_path_factory.mktemp("tcp") / "home"
    proc = await start_server(home, "serve", "--tcp", "--port", "0", env=server_env(home), stdin=None)
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
    assert line.startswith("THREADLINE_TCP_PORT="), line
    yield int(line.split("=", 1)[1]), home
    proc.kill()
    await proc.wait()


async def call(conn: RawConnection, method: str, params: Any = None) -> dict[str, Any] | None:
    """The next message after a request (its response: answers come in order), or None when the server closed
    the connection instead."""
    conn.request(method, params)
    try:
        return await conn.receive()
    except EOFError:
        return None


async def reply(conn: RawConnection, method: str, params: Any = None) -> dict[str, Any]:
    """The response to a request the server must answer rather than close the connection on."""
    response = await call(conn, method, params)
    assert response is not None, f"the server closed the connection instead of answering {method}"
    return response


def initialize(token: str | None) -> dict:
    options = {} if token is None else {"token": token}
    return {"processId": os.getpid(), "capabilities": {}, "rootUri": None, "initializationOptions": options}


async def test_listens_on_loopback_only_with_a_private_token(tcp_server):
    port, home = tcp_server
    token_file = home / "tcp-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and len(token_file.read_text()) >= 32
    listening = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    ours = [cols[1] for cols in listening if cols[3] == "0A" and int(cols[1].split(":")[1], 16) == port]
    assert ours == [f"0100007F:{port:04X}"], ours  # 127.0.0.1, nothing else (no 0.0.0.0)
    assert not any(
        int(cols[1].split(":")[1], 16) == port
        for cols in (line.split() for line in Path("/proc/net/tcp6").read_text().splitlines()[1:])
    )
    other = _non_loopback_address()
    if other:
        with pytest.raises(OSError):
            socket.create_connection((other, port), timeout=2).close()


@pytest.mark.parametrize("token", [None, "", "wrong", "x" * 10_000])
async def test_a_client_without_the_token_is_refused_before_any_method_runs(tcp_server, token, tmp_path):
    port, home = tcp_server
    conn = await RawConnection.open(port)
    early = await reply(conn, "createSession", {"cwd": str(tmp_path)})
    assert early["error"]["code"] == -32002  # nothing runs before initialize
    refused = await reply(conn, "initialize", initialize(token))
    assert refused["error"]["code"] == -32001 and refused["error"]["data"]["code"] == "Unauthorized"
    for _ in range(20):  # a request racing the close is refused too; then the connection is gone
        answer = await call(conn, "createSession", {"cwd": str(tmp_path)})
        if answer is None:
            break
        assert answer["error"]["code"] == -32002, answer
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the connection stayed open after a refused initialize")
    await conn.close()
    good = await RawConnection.open(port)  # the refused client changed nothing
    assert "result" in await reply(good, "initialize", initialize((home / "tcp-token").read_text()))
    assert (await reply(good, "listSessions", {"cwd": str(tmp_path)}))["result"]["sessions"] == []
    await good.close()


async def test_the_right_token_serves_every_method(tcp_server, tmp_path):
    port, home = tcp_server
    conn = await RawConnection.open(port)
    assert "result" in await reply(conn, "initialize", initialize((home / "tcp-token").read_text()))
    sid = (await reply(conn, "createSession", {"cwd": str(tmp_path)}))["result"]["sessionId"]
    assert (await reply(conn, "readTranscript", {"sessionId": sid}))["result"]["items"] == []
    await conn.close()


def _non_loopback_address() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


# --- the token cannot be bypassed ------------------------------------------------------------------


async def test_notifications_and_null_id_requests_before_the_token_run_nothing(tcp_server, tmp_path):
    """The attack: ``createSession`` as a notification, and as a request with ``"id": null``, before initialize."""
    port, home = tcp_server
    stranger = await RawConnection.open(port)
    for method, params in (
        ("createSession", {"cwd": str(tmp_path), "approvalPolicy": "auto"}),
        ("importSession", {"cwd": str(tmp_path), "messages": [{"role": "user", "content": "x"}]}),
    ):
        stranger.send({"jsonrpc": "2.0", "method": method, "params": params})
        stranger.send({"jsonrpc": "2.0", "id": None, "method": method, "params": params})
    nulls = [await stranger.receive() for _ in range(2)]  # the two null-id requests: invalid, never run
    assert [m["error"]["code"] for m in nulls] == [-32600, -32600], nulls
    early = await reply(stranger, "listSessions", {})  # answered in order: the earlier messages were handled first
    assert early["error"]["code"] == -32002, early
    await stranger.close()
    good = await RawConnection.open(port)
    assert "result" in await reply(good, "initialize", initialize((home / "tcp-token").read_text()))
    assert (await reply(good, "listSessions", {"cwd": str(tmp_path)}))["result"]["sessions"] == []
    await good.close()


async def test_an_unauthenticated_client_cannot_send_a_large_message(tcp_server):
    port, _home = tcp_server
    stranger = await RawConnection.open(port)
    answer = await call(stranger, "initialize", {**initialize(None), "padding": "p" * (256 * 1024)})
    assert (
        answer is not None and answer["error"]["code"] == -32600 and "exceeds the limit" in answer["error"]["message"]
    )
    await stranger.close()


async def test_a_non_ascii_token_is_refused_cleanly(tcp_server):
    port, _home = tcp_server
    stranger = await RawConnection.open(port)
    refused = await reply(stranger, "initialize", initialize("jeton-é-\u6f22"))
    assert refused["error"]["code"] == -32001 and refused["error"]["data"]["code"] == "Unauthorized", refused
    await stranger.close()


async def test_idle_unauthenticated_sockets_do_not_lock_out_the_real_client(tcp_server, tmp_path):
    """Strangers open sockets and send nothing (or half a header). They must not hold the one client
    slot: the real client with the token is admitted and served at once, and each stranger is closed at the
    pre-auth deadline."""
    port, home = tcp_server
    idle = [await RawConnection.open(port) for _ in range(6)]
    idle[0].writer.write(b"Content-Length: 5")  # half a header, never finished
    idle[1].writer.write(b"Content-Length: 60000\r\n\r\n{")  # a body that never arrives
    good = await RawConnection.open(port)
    assert "result" in await reply(good, "initialize", initialize((home / "tcp-token").read_text()))
    sid = (await reply(good, "createSession", {"cwd": str(tmp_path)}))["result"]["sessionId"]
    assert (await reply(good, "readTranscript", {"sessionId": sid}))["result"]["items"] == []
    assert not any(conn.reader.at_eof() for conn in idle), "the real client was served only after the strangers left"
    for conn in idle:  # closed by the server at its deadline (a few seconds), without a word
        assert await asyncio.wait_for(conn.reader.read(), 60) == b""
        await conn.close()
    assert (await reply(good, "listSessions", {"cwd": str(tmp_path)}))["result"]["sessions"][0]["sessionId"] == sid
    await good.close()
