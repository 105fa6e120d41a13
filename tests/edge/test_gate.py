"""The connection gate (``server.edge.gate``) that every framing calls: the stdio and TCP servers over real
processes are in tests/reliability/test_tcp.py and test_hostile_rpc.py; this is the rule itself."""

from __future__ import annotations

from server.edge.gate import NOT_INITIALIZED, SHUTTING_DOWN, UNAUTHORIZED, carries_token, error_response, gate


def test_before_initialize_only_initialize_and_exit_pass():
    assert gate("initialize", initialized=False) is None
    assert gate("exit", initialized=False) is None
    assert gate(None, initialized=False) is None  # a response to a server request
    for method in ("createSession", "submitTurn", "$/cancelRequest"):
        assert gate(method, initialized=False) is NOT_INITIALIZED
        assert gate(method, initialized=True) is None


def test_after_shutdown_only_exit_passes():
    assert gate("createSession", initialized=True, shutting_down=True) is SHUTTING_DOWN
    assert gate("exit", initialized=True, shutting_down=True) is None


def test_the_token_must_be_the_connections_exactly():
    assert carries_token({"initializationOptions": {"token": "t0k"}}, "t0k")
    for params in (None, {}, {"initializationOptions": None}, {"initializationOptions": {"token": 7}}):
        assert not carries_token(params, "t0k")
    assert not carries_token({"initializationOptions": {"token": "t0"}}, "t0k")


def test_the_refusals_read_as_on_the_wire():
    assert error_response(3, UNAUTHORIZED) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {
            "code": -32001,
            "message": "unauthorized: initializationOptions.token is missing or wrong",
            "data": {"code": "Unauthorized"},
        },
    }
    assert error_response(4, NOT_INITIALIZED)["error"]["code"] == -32002
