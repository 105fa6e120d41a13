"""Framing and lifecycle over real stdio: whatever bytes a client sends, the server answers and keeps serving.

One raw connection serves the module, with a 64 KiB message limit (``THREADLINE_MAX_MESSAGE_BYTES``) so the
oversized path is cheap to reach. Each test ends by proving the next ordinary request is answered.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from protocol import METHODS
from tests.harness import RawConnection, start_client

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIMIT = 64 * 1024


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def conn(module_home: Path) -> AsyncIterator[RawConnection]:
    connection = await RawConnection.spawn(module_home, THREADLINE_MAX_MESSAGE_BYTES=str(LIMIT))
    yield connection
    assert await connection.close() == 0


async def assert_still_serving(conn: RawConnection) -> None:
    reply = await conn.call("listSessions", {})
    assert isinstance(reply["result"]["sessions"], list), reply


# --- lifecycle --------------------------------------------------------------------------------------------


async def test_requests_before_initialize_get_32002_and_initialize_still_works(home):
    conn = await RawConnection.spawn(home, initialize=False)
    try:
        early = await conn.call("listSessions", {})
        assert early["error"]["code"] == -32002
        init = await conn.call("initialize", {"processId": os.getpid(), "capabilities": {}})
        assert "capabilities" in init["result"]
        conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        await assert_still_serving(conn)
    finally:
        await conn.close()


async def test_initialize_lists_our_methods_under_capabilities_experimental_threadline(conn):
    init = conn.received[0]
    assert init["id"] is not None and "result" in init
    threadline = init["result"]["capabilities"]["experimental"]["threadline"]
    assert set(threadline["methods"]) == set(METHODS)
    assert {
        "createSession",
        "listSessions",
        "importSession",
        "readTranscript",
        "searchTranscript",
        "forkSession",
        "deleteSession",
        "submitTurn",
        "cancelTurn",
        "getContextView",
        "readArtifact",
    } <= set(threadline["methods"])
    assert threadline["notifications"] == ["sessionUpdate"]
    assert threadline["serverRequests"] == [
        "editor/definition",
        "editor/diagnostics",
        "editor/references",
        "editor/workspaceSymbols",
        "requestApproval",
    ]


async def test_invalid_initialization_options_are_invalid_params(home):
    conn = await RawConnection.spawn(home, initialize=False)
    assert conn.proc is not None  # spawned: the server is our child process
    try:
        reply = await conn.call(
            "initialize", {"processId": None, "capabilities": {}, "initializationOptions": {"approvalPolicy": "yolo"}}
        )
        assert reply["error"]["code"] == -32602
        assert "approvalPolicy" in reply["error"]["message"]
        assert reply["error"]["data"] == {"code": "InvalidParams"}, reply
    finally:
        conn.proc.kill()
        await conn.proc.wait()


async def test_initialize_params_pygls_cannot_read_are_invalid_params_with_data_code(home):
    """``initialize`` is typed by lsprotocol, not by us: params it cannot structure are refused before any
    handler runs (``ThreadlineServer._deliver``), with the same ``data.code`` as a bad field of our methods."""
    conn = await RawConnection.spawn(home, initialize=False)
    assert conn.proc is not None
    try:
        reply = await conn.call("initialize", {"processId": "me", "capabilities": 5})
        assert reply["error"]["code"] == -32602 and reply["error"]["message"].startswith("invalid params"), reply
        assert reply["error"]["data"] == {"code": "InvalidParams"}, reply
        reply = await conn.call("initialize", {"processId": None, "capabilities": {}})
        assert "result" in reply, reply  # the connection still works
    finally:
        conn.proc.kill()
        await conn.proc.wait()


async def test_shutdown_then_exit_ends_the_process_with_code_0(home):
    client = await start_client(home)
    assert await client.close() == 0


async def test_exit_without_shutdown_ends_the_process_with_code_1(home):
    conn = await RawConnection.spawn(home)
    assert conn.proc is not None
    conn.send({"jsonrpc": "2.0", "method": "exit"})
    assert await conn.proc.wait() == 1


# --- malformed input --------------------------------------------------------------------------------------


async def test_malformed_json_body_is_parse_error_and_the_next_request_is_answered(conn):
    conn.send_bytes(b'{"jsonrpc": "2.0", "id": 7, "method": "listSessions", "params": {')
    reply = await conn.reply(7)  # the id can be read, so the sender is answered
    assert reply["error"]["code"] == -32700
    await assert_still_serving(conn)


async def test_invalid_utf8_body_is_parse_error_and_the_next_request_is_answered(conn):
    conn.send_bytes(b'{"jsonrpc": "2.0", "id": 8, "method": "searchTranscript", "params": {"query": "\xff\xfe"}}')
    reply = await conn.reply(8)  # a request cut mid-character is answered with its own id
    assert reply["error"]["code"] == -32700
    conn.send_bytes(b'{"jsonrpc": "2.0", "method": "x", "params": {"id": 9, "q": "\xff"}}')
    assert (await conn.reply(None))["error"]["code"] == -32700  # an id inside params is not the request's id
    await assert_still_serving(conn)


async def test_wrong_typed_param_is_invalid_params_and_the_next_request_is_answered(conn):
    reply = await conn.call("readTranscript", {"sessionId": ["not", "a", "string"]})
    assert reply["error"]["code"] == -32602
    assert "sessionId" in reply["error"]["message"]
    await assert_still_serving(conn)


@pytest.mark.parametrize(
    ("method", "params", "says"),
    [
        (
            "readTranscript",
            {"sessionId": 42},
            "invalid params for readTranscript: Expected `str`, got `int` - at `$.sessionId`",
        ),
        ("createSession", {}, "invalid params for createSession: Object missing required field `cwd`"),
        ("submitTurn", {"sessionId": "ses_x", "text": ["hi"]}, "Expected `str`, got `array` - at `$.text`"),
        ("getContextView", {"sessionId": "ses_x", "thresholdRatio": "high"}, "at `$.thresholdRatio`"),
        ("listSessions", [1, 2], "invalid params for listSessions: Expected `object`, got `array`"),
        ("workspace/executeCommand", {"command": "nope"}, "'nope' is not defined"),  # pygls's own refusal
    ],
)
async def test_every_malformed_params_error_carries_data_code_invalid_params(conn, method, params, says):
    """PROTOCOL.md's rule "bad input gets -32602 with data.code": a malformed request's error names the field in
    its message and carries ``data.code`` ``InvalidParams``, as ACP's ``_threadline/*`` methods answer it."""
    reply = await conn.call(method, params)
    assert reply["error"]["code"] == -32602, reply
    assert says in reply["error"]["message"], reply
    assert reply["error"]["data"] == {"code": "InvalidParams"}, reply
    await assert_still_serving(conn)


async def test_oversized_message_is_refused_and_the_next_request_is_answered(conn, tmp_path):
    big = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "importSession",
            "params": {"cwd": str(tmp_path), "messages": [{"role": "user", "content": "x" * (LIMIT + 1)}]},
        }
    ).encode()
    conn.send_bytes(big)
    reply = await conn.reply(None)
    assert reply["error"]["code"] == -32600
    assert "exceeds the limit" in reply["error"]["message"]
    under = await conn.call(
        "importSession", {"cwd": str(tmp_path), "messages": [{"role": "user", "content": "y" * (LIMIT - 1024)}]}
    )
    assert under["result"]["messageCount"] == 1
    await assert_still_serving(conn)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"[1, 2, 3]", -32600),
        (b'"just a string"', -32600),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "listSessions"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 3, "method": 42}', -32600),
        (b'{"jsonrpc": "2.0", "id": 3, "method": "listSessions", "params": "x"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 3, "method": "noSuchMethod", "params": {}}', -32601),
    ],
)
async def test_messages_that_are_not_valid_requests_get_an_error_and_the_next_is_answered(conn, body, code):
    conn.send_bytes(body)
    while True:
        reply = await conn.receive()
        if "error" in reply:
            break
    assert reply["error"]["code"] == code, reply
    await assert_still_serving(conn)


async def test_missing_content_length_header_is_invalid_request_and_the_next_is_answered(conn):
    conn.send_bytes(b"", header=b"Content-Type: application/json\r\n\r\n")
    reply = await conn.reply(None)
    assert reply["error"]["code"] == -32600
    await assert_still_serving(conn)


async def test_issue_51_newline_delimited_json_is_answered_invalid_request_with_its_id(conn):
    """JSON lines without headers (as ACP speaks): each is answered -32600 with its id and the reason, and the
    server keeps reading (protocol/README.md)."""
    for msg_id in (901, 902):
        line = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "listSessions", "params": {}})
        conn.send_bytes(line.encode() + b"\n", header=b"")
        reply = await conn.reply(msg_id)
        assert reply["error"]["code"] == -32600
        assert "Content-Length" in reply["error"]["message"]
    await assert_still_serving(conn)


async def test_issue_51_initialize_with_empty_params_names_the_missing_field(home):
    conn = await RawConnection.spawn(home, initialize=False)
    try:
        reply = await conn.call("initialize", {})
        assert reply["error"]["code"] == -32602
        assert "capabilities is required" in reply["error"]["message"], reply
        init = await conn.call("initialize", {"processId": os.getpid(), "capabilities": {}})
        assert "capabilities" in init["result"]
    finally:
        await conn.close()


async def test_every_outgoing_message_carries_jsonrpc_2_0(conn, tmp_path):
    """Successes, method errors, framing errors and notifications alike."""
    await conn.call("createSession", {"cwd": str(tmp_path)})
    await conn.call("readTranscript", {"sessionId": "ses_missing"})
    await conn.call("noSuchMethod", {})
    conn.send_bytes(b"{not json")
    await conn.reply(None)
    await assert_still_serving(conn)
    assert len(conn.received) >= 6
    assert all(m.get("jsonrpc") == "2.0" for m in conn.received), conn.received


# --- large messages over real stdio (over 1 MB used to deadlock the stdin pump) --------------------


@pytest.mark.parametrize("megabytes", [2, 20])
async def test_messages_over_one_megabyte_are_read_and_answered(home, tmp_path, megabytes):
    big = await RawConnection.spawn(home)
    try:
        text = "z" * (megabytes * 1024 * 1024)
        reply = await big.reply(
            big.request("importSession", {"cwd": str(tmp_path), "messages": [{"role": "user", "content": text}]}),
            timeout=120,
        )
        assert reply["result"]["messageCount"] == 1, reply
        items = (await big.call("readTranscript", {"sessionId": reply["result"]["sessionId"]}))["result"]["items"]
        assert len(items[0]["content"]) == len(text)  # stored whole
        await assert_still_serving(big)
    finally:
        assert await big.close() == 0


async def test_requests_after_shutdown_are_answered_invalid_request(home):
    conn = await RawConnection.spawn(home)
    assert conn.proc is not None
    try:
        assert "error" not in await conn.call("shutdown", None)
        late = await conn.call("listSessions", {})
        assert late["error"]["code"] == -32600, late
        conn.send({"jsonrpc": "2.0", "method": "exit"})
        async with asyncio.timeout(30):
            assert await conn.proc.wait() == 0
    finally:
        if conn.proc.returncode is None:
            conn.proc.kill()
            await conn.proc.wait()


async def test_a_request_with_a_null_id_is_invalid_and_runs_nothing(conn, tmp_path):
    conn.send({"jsonrpc": "2.0", "id": None, "method": "createSession", "params": {"cwd": str(tmp_path)}})
    reply = await conn.reply(None)
    assert reply["error"]["code"] == -32600 and "null" in reply["error"]["message"]
    sessions = (await conn.call("listSessions", {"cwd": str(tmp_path)}))["result"]["sessions"]
    assert sessions == []


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("readTranscript", {"sessionId": "ses_x", "afterSeq": 10**30}, "afterSeq"),
        ("readTranscript", {"sessionId": "ses_x", "limit": 2**64}, "limit"),
        ("readEvents", {"sessionId": "ses_x", "afterId": -(10**20)}, "afterId"),
        ("getContextView", {"sessionId": "ses_x", "contextWindowTokens": 10**40}, "contextWindowTokens"),
    ],
)
async def test_huge_integers_are_invalid_params_naming_the_field(conn, method, params, field):
    reply = await conn.call(method, params)
    assert reply["error"]["code"] == -32602 and field in reply["error"]["message"], reply


async def test_a_cwd_with_a_component_over_255_bytes_is_invalid_params(conn, tmp_path):
    reply = await conn.call("createSession", {"cwd": str(tmp_path / ("d" * 300))})
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["code"] == "InvalidCwd", reply
    await assert_still_serving(conn)
