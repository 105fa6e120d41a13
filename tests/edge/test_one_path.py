"""One request path (``server.edge.core``): every Threadline front end turns a message into a handler call there,
and each connection holds its own small state over a runtime it never copies. The paths over real processes are
tests/e2e (stdio, the daemon, exec in process) and tests/reliability (TCP); this is the structure they share."""

from __future__ import annotations

import ast
import concurrent.futures
from pathlib import Path
from typing import Any

import pytest

from server.config import load_settings
from server.edge.core import ConnectionState, Endpoint, MethodNotFound, TokenRefused
from server.edge.hub import Hub
from server.runtime import Runtime

SERVER = Path(__file__).resolve().parents[2] / "server"
CALLS_HANDLERS = {"run_handler", "call"}


class _Peer:
    def send_frame(self, data: bytes) -> None:
        pass

    def request(self, method: str, params: Any) -> tuple[str, concurrent.futures.Future[Any]]:
        raise AssertionError("nothing is asked here")

    def withdraw(self, msg_id: str) -> None:
        pass


async def _nobody(method: str, params: object) -> object:
    raise AssertionError(f"nothing is asked here, not {method}")


def _endpoint(runtime: Runtime, daemon: bool = True) -> Endpoint:
    return Endpoint(runtime, runtime.settings, Hub(), _Peer(), _nobody, daemon=daemon)


def _handler_calls(path: Path) -> list[str]:
    """Where ``path`` runs a handler: ``run_handler(...)`` or ``HANDLERS[...]``/``handler.call(...)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id == "run_handler":
                found.append(f"{path.name}:{node.lineno} run_handler")
            if isinstance(fn, ast.Attribute) and fn.attr == "call" and "handler" in ast.unparse(fn.value).lower():
                found.append(f"{path.name}:{node.lineno} {ast.unparse(fn)}")
    return found


def test_only_the_core_runs_handlers_for_the_threadline_front_ends():
    """pygls's app, TCP, the daemon and exec in process are pumps: none of them calls a handler itself."""
    edge = sorted(p for p in (SERVER / "edge").glob("*.py") if p.name not in ("core.py", "dispatch.py"))
    assert [c for p in edge for c in _handler_calls(p)] == []
    assert _handler_calls(SERVER / "edge" / "core.py")


def test_a_connection_is_its_own_state_over_a_runtime_it_never_copies(tmp_path):
    """B-DAEMON-1: two connections of one daemon share its store, sessions and processes; each has its own
    settings (its ``initialize`` options), editor link and attachments."""
    runtime = Runtime(load_settings({"THREADLINE_HOME": str(tmp_path / "home")}))
    first, second = _endpoint(runtime), _endpoint(runtime)
    first.initialize({"approvalPolicy": "auto", "unattended": True}, None)
    assert first.connection.settings.unattended and first.connection.settings.approval_policy == "auto"
    assert not second.connection.settings.unattended
    assert runtime.settings is second.connection.settings  # the runtime's own are untouched
    for shared in ("sessions", "processes", "mcp", "hooks", "models", "calibrations", "server_windows"):
        assert getattr(first.connection, shared) is getattr(runtime, shared)
    assert first.connection.clients is not second.connection.clients
    assert isinstance(first.connection, ConnectionState) and not isinstance(first.connection, Runtime)
    assert first.initialized and not second.initialized


def test_initialize_refuses_a_missing_or_wrong_token(tmp_path):
    runtime = Runtime(load_settings({"THREADLINE_HOME": str(tmp_path / "home")}))
    endpoint = _endpoint(runtime, daemon=False)
    endpoint.token = "t0k"
    with pytest.raises(TokenRefused) as refused:
        endpoint.initialize({"token": "t0"}, None)
    assert refused.value.error.code == -32001 and not endpoint.initialized
    endpoint.initialize({"token": "t0k"}, None)
    assert endpoint.initialized


async def test_a_method_the_table_lacks_is_not_found(tmp_path):
    runtime = Runtime(load_settings({"THREADLINE_HOME": str(tmp_path / "home")}))
    with pytest.raises(MethodNotFound):
        await _endpoint(runtime).call("noSuchMethod", {})
