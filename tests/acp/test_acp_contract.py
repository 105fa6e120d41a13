"""ACP's session methods go through Threadline's method contract (``server.edge.dispatch``): each runs under the
row of the method it is (a read cannot write, an exclusive one has its session to itself) and ``session/prompt``
is ``submitTurn``'s handler. The behaviour over a real ACP process is tests/acp/test_acp_e2e.py; this is the rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from acp import RequestError

from server.acp.agent import ThreadlineAgent
from server.acp.client import AcpClient
from server.config import load_settings
from server.edge.dispatch import under_contract
from server.runtime import Runtime
from server.services import sessions as service
from server.transcript.store import WriteInRead

AGENT = Path(__file__).resolve().parents[2] / "server" / "acp" / "agent.py"


@pytest.fixture
async def runtime(tmp_path):
    rt = Runtime(load_settings({"THREADLINE_HOME": str(tmp_path / "home")}))
    await rt.open(warm_search=False)
    try:
        yield rt
    finally:
        await rt.close()


def test_every_acp_session_use_case_runs_under_a_method_row():
    """In ``server.acp.agent`` a session use case (``sessions.*``) is only ever called inside ``under_contract``,
    and the turn only through ``submitTurn``'s handler (never ``server.services.turns.submit_turn``)."""
    tree = ast.parse(AGENT.read_text())
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "under_contract":
            inside |= {id(n) for arg in node.args for n in ast.walk(arg)}
    bare = [
        f"line {node.lineno}: {ast.unparse(node.func)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and ast.unparse(node.func.value) == "sessions"
        and node.func.attr not in ("modes", "config_options")  # answers' shapes, read inside no method
        and id(node) not in inside
    ]
    assert bare == []
    assert "submit_turn" not in AGENT.read_text()


async def test_an_acp_read_cannot_write(runtime, tmp_path):
    """``session/list`` runs as ``listSessions`` (a read): a write inside it fails loudly."""
    session = await service.create_session(runtime, str(tmp_path))

    async def writes():
        await service.update_session(runtime, session.id, approval_policy="auto")

    with pytest.raises(WriteInRead):
        await under_contract("listSessions", runtime, None, writes)
    assert (await service.stored(runtime, session.id)).approval_policy != "auto"


async def test_acp_compaction_is_exclusive(runtime, tmp_path):
    """``_threadline/compactSession`` is ``compactSession``: refused while something else has the session."""
    session = await service.create_session(runtime, str(tmp_path))
    agent = ThreadlineAgent(runtime, AcpClient())
    with runtime.sessions.get(session.id).turns.exclusive("rewindFiles"), pytest.raises(RequestError) as refused:
        await agent.ext_method("threadline/compactSession", {"sessionId": session.id})
    assert isinstance(refused.value.data, dict) and refused.value.data["code"] == "TurnAlreadyRunning"
