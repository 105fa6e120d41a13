"""Hostile JSON-RPC input: every method fuzzed (hypothesis) with wrong types, missing and extra fields, huge
strings and deep nesting; invalid UTF-8, broken framing and oversized messages sent as raw bytes.

One server for the module (blocking pipes, so hypothesis runs plain sync tests). Every request must get a
response with its id (an error for malformed input, never -32603 "internal error"), the server must keep
answering, and a session stored before the fuzzing must read back byte-identical afterwards.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import METHODS
from server.edge.transport import recover_id
from tests.harness import frame, popen_server, read_frame, server_env

MAX_MESSAGE = 1_000_000  # THREADLINE_MAX_MESSAGE_BYTES for this module's server
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


class Wire:
    """A server process and blocking, framed access to its stdio."""

    def __init__(self, home: Path):
        self.home = home
        self.proc = popen_server(home, env=server_env(home, None, THREADLINE_MAX_MESSAGE_BYTES=str(MAX_MESSAGE)))
        self.inbox: queue.Queue[dict | None] = queue.Queue()
        self._ids = iter(range(1, 1 << 30))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            message = read_frame(self.proc.stdout)
            self.inbox.put(message)
            if message is None:
                return

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send_body(self, body: bytes) -> None:
        self.write(frame(body))

    def request(self, method: Any, params: Any = None, *, with_params: bool = True) -> int:
        msg_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if with_params:
            message["params"] = params
        self.send_body(json.dumps(message).encode())
        return msg_id

    def reply(self, msg_id: Any, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            message = self.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            assert message is not None, "the server closed its stdout (crashed?)"
            if "method" not in message and message.get("id") == msg_id:
                return message

    def call(self, method: str, params: Any = None) -> dict:
        return self.reply(self.request(method, params))

    def result(self, method: str, params: Any = None) -> Any:
        answer = self.call(method, params)
        assert "result" in answer, answer
        return answer["result"]


@pytest.fixture(scope="module")
def wire(tmp_path_factory) -> Iterator[Wire]:
    home = tmp_path_factory.mktemp("hostile") / "home"
    home.mkdir()
    w = Wire(home)
    assert "result" in w.call("initialize", {"processId": os.getpid(), "capabilities": {}, "rootUri": None})
    w.send_body(b'{"jsonrpc":"2.0","method":"initialized"}')
    yield w
    assert w.proc.stdin is not None
    w.proc.stdin.close()
    w.proc.kill()
    w.proc.wait()


@pytest.fixture(scope="module")
def keeper(wire, tmp_path_factory) -> dict:
    """A session stored before any fuzzing, and how it reads back."""
    cwd = str(tmp_path_factory.mktemp("keeper-work"))
    sid = wire.result(
        "importSession",
        {
            "cwd": cwd,
            "title": "keep me",
            "messages": [
                {"role": "user", "content": "please remember the platypus"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"x"}'}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
                {"role": "assistant", "content": "done: 鸭嘴兽"},
            ],
        },
    )["sessionId"]
    return {"sid": sid, "snapshot": snapshot(wire, sid)}


def snapshot(wire: Wire, sid: str) -> Any:
    sessions = [s for s in wire.result("listSessions", {})["sessions"] if s["sessionId"] == sid]
    return wire.result("readTranscript", {"sessionId": sid}), sessions[0]["messageCount"]


def assert_still_sound(wire: Wire, keeper: dict) -> None:
    assert wire.proc.poll() is None, "the server died"
    assert snapshot(wire, keeper["sid"]) == keeper["snapshot"], "stored data changed"


def assert_answered(answer: dict) -> None:
    assert answer.get("jsonrpc") == "2.0"
    if "error" in answer:
        err = answer["error"]
        assert isinstance(err.get("code"), int) and isinstance(err.get("message"), str), err
        assert err["code"] != -32603, f"an internal error: {err}"
    else:
        assert "result" in answer


# --- strategies ------------------------------------------------------------------------------------------

FIELDS = {name: [f.encode_name for f in msgspec.structs.fields(spec.params)] for name, spec in METHODS.items()}
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
huge_strings = st.integers(min_value=10_000, max_value=300_000).map(lambda n: "A" * n)
fake_ids = st.sampled_from(["", "ses_0", "ses_" + "0" * 32, "../../etc/passwd", "%s", "\u0000"])


@st.composite
def params_for(draw, method: str) -> Any:
    """Known fields with arbitrary (mostly wrong) values, some dropped, plus extra fields; or not an object."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.lists(json_values, max_size=3) | scalars)
    params = {}
    for name in FIELDS[method]:
        if draw(st.booleans()):
            params[name] = draw(json_values | huge_strings | (fake_ids if name.endswith("Id") else scalars))
    for extra in draw(st.lists(st.text(min_size=1, max_size=12), max_size=3)):
        params[extra] = draw(json_values)
    return params


# --- tests -----------------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_every_method_with_hostile_params_gets_an_answer(wire, keeper, data):
    method = data.draw(st.sampled_from(sorted(METHODS)))
    params = data.draw(params_for(method))
    assert_answered(wire.call(method, params))


@FUZZ
@given(
    method=st.text(max_size=30).filter(
        lambda m: m not in METHODS and not m.startswith(("$/", "exit", "shutdown", "initialize"))
    ),
    params=json_values,
)
def test_unknown_methods_get_method_not_found(wire, keeper, method, params):
    answer = wire.call(method, params if isinstance(params, (dict, list)) else {})
    assert answer["error"]["code"] == -32601, answer


@FUZZ
@given(
    method=st.sampled_from(
        ["readTranscript", "getContextView", "forkSession", "searchTranscript", "readArtifact", "submitTurn"]
    ),
    data=st.data(),
)
def test_wrong_types_next_to_a_real_session_id_are_invalid_params(wire, keeper, method, data):
    """The real session id with every other field of a wrong type: -32602 naming the field, nothing changes."""
    bad = {
        "afterSeq": "1",
        "limit": "ten",
        "atSeq": [],
        "query": 7,
        "artifactId": {},
        "text": ["hi"],
        "contextWindowTokens": "big",
        "byteRange": "0-10",
        "images": "none",
    }
    fields = [f for f in FIELDS[method] if f in bad]
    chosen = data.draw(st.lists(st.sampled_from(fields), min_size=1, unique=True))
    params = {"sessionId": keeper["sid"], **{f: bad[f] for f in chosen}}
    answer = wire.call(method, params)
    assert answer["error"]["code"] == -32602, answer
    assert any(f in answer["error"]["message"] for f in chosen), answer


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=st.binary(min_size=1, max_size=300))
def test_bytes_that_are_not_json_get_a_parse_error(wire, keeper, body):
    try:
        json.loads(body)
        return
    except ValueError:
        pass
    wire.send_body(body)
    assert wire.reply(recover_id(body))["error"]["code"] in (-32700, -32600)


def test_invalid_utf8_inside_a_string_is_a_parse_error(wire, keeper):
    wire.send_body(b'{"jsonrpc":"2.0","id":77,"method":"listSessions","params":{"cwd":"\xff\xfe\xc3"}}')
    assert wire.reply(77)["error"]["code"] == -32700  # answered with its id, so the sender is not left waiting
    assert_still_sound(wire, keeper)


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_deep_nesting_is_answered(wire, keeper, depth):
    body = b'{"jsonrpc":"2.0","id":88,"method":"createSession","params":{"cwd":' + b"[" * depth + b"]" * depth + b"}}"
    wire.send_body(body)
    answer = wire.inbox.get(timeout=20)
    assert answer is not None, "the server died"
    assert answer["error"]["code"] in (-32700, -32602), answer
    assert_still_sound(wire, keeper)


@pytest.mark.parametrize(
    "frame",
    [
        b'Content-Length: 5\r\n\r\n{"jso',  # short body, then the next frame's bytes
        b"Content-Length: nine\r\n\r\n",  # non-numeric length
        b"Content-Type: text/plain\r\n\r\n",  # no length at all
        b"X" * 20_000 + b"\r\n\r\n",  # an endless header line
        b"garbage line\r\nContent-Length: 2\r\n\r\n{}",  # junk before a header
        b"Content-Length: 99999999999999999999\r\n\r\n",  # an absurd length
    ],
)
def test_broken_framing_does_not_stop_the_server(wire, keeper, frame):
    wire.write(frame)
    wire.write(b"\r\n\r\n")  # resynchronise whatever the frame left half-read
    msg_id = wire.request("listSessions", {})
    deadline = time.monotonic() + 20
    while True:  # errors for the broken frame may come first; our request must then be answered
        message = wire.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
        assert message is not None, "the server died"
        if message.get("id") == msg_id:
            break
    assert_still_sound(wire, keeper)


def test_an_oversized_message_is_refused_without_buffering_it(wire, keeper):
    """150 MB against a 1 MB limit: answered -32600, and the server's peak memory barely moves."""
    before = _peak_rss_kb(wire.proc.pid)
    size, chunk = 150 * MAX_MESSAGE, b"x" * MAX_MESSAGE
    wire.write(b"Content-Length: %d\r\n\r\n" % size)
    for _ in range(size // len(chunk)):
        wire.proc.stdin.write(chunk)
    wire.proc.stdin.flush()
    answer = wire.reply(None)
    assert answer["error"]["code"] == -32600 and "exceeds the limit" in answer["error"]["message"]
    assert _peak_rss_kb(wire.proc.pid) - before < 20_000, "the server buffered the oversized message"
    assert_still_sound(wire, keeper)


def test_after_all_the_fuzzing_the_server_answers_and_nothing_changed(wire, keeper):
    assert_still_sound(wire, keeper)
    assert wire.result("searchTranscript", {"query": "platypus"})["hits"]


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0
