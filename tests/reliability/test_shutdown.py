"""Robustness: every way a server is told to stop ends it promptly with its store closed.

``threadline serve`` and ``threadline acp`` (one code path through ``server/serve.py``) get stdin EOF (or LSP
``shutdown``/``exit``), then SIGTERM or SIGHUP at several delays after it, from none to well after; the review saw
``acp`` print a ``CancelledError`` traceback from ``store.close()`` and sometimes never exit, holding the database.
Measured: the process exits within a generous bound, its stderr holds no traceback, and the database passes
``PRAGMA integrity_check``, takes a write lock at once, and still holds the session made before the stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.harness import frame, log_path, server_env, start_server

pytestmark = pytest.mark.asyncio(loop_scope="function")
DELAYS = (0.0, 0.003, 0.02, 0.1, 0.5)
EXIT_BOUND_S = 60.0  # generous on a loaded machine; a hang is what fails it


def lsp(method: str, params: object, msg_id: int | None = None) -> bytes:
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        message["id"] = msg_id
    return frame(json.dumps(message).encode())


async def read_lsp(stdout: asyncio.StreamReader, msg_id: int) -> dict:
    while True:
        length = 0
        while (line := await stdout.readline()) not in (b"\r\n", b"\n"):
            assert line, "the server closed its stdout"
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        message = json.loads(await stdout.readexactly(length))
        if message.get("id") == msg_id:
            return message


async def read_acp(stdout: asyncio.StreamReader, msg_id: int) -> dict:
    while True:
        line = await stdout.readline()
        assert line, "the server closed its stdout"
        message = json.loads(line)
        if message.get("id") == msg_id:
            return message


async def started(frontend: str, home: Path, work: Path) -> asyncio.subprocess.Process:
    """A server with one session stored (so the store has written)."""
    proc = await start_server(home, frontend, env=server_env(home))
    assert proc.stdin is not None and proc.stdout is not None
    if frontend == "serve":
        proc.stdin.write(lsp("initialize", {"processId": None, "capabilities": {}, "rootUri": None}, 1))
        assert "result" in await asyncio.wait_for(read_lsp(proc.stdout, 1), 120)
        proc.stdin.write(lsp("initialized", {}))
        proc.stdin.write(lsp("createSession", {"cwd": str(work)}, 2))
        assert "result" in await asyncio.wait_for(read_lsp(proc.stdout, 2), 60)
    else:
        send = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        proc.stdin.write((json.dumps(send) + "\n").encode())
        assert "result" in await asyncio.wait_for(read_acp(proc.stdout, 1), 120)
        send = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(work), "mcpServers": []}}
        proc.stdin.write((json.dumps(send) + "\n").encode())
        assert "result" in await asyncio.wait_for(read_acp(proc.stdout, 2), 60)
    await proc.stdin.drain()
    return proc


def check_store(home: Path) -> None:
    db = sqlite3.connect(home / "threadline.db", timeout=0.5)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.execute("BEGIN IMMEDIATE")  # nobody holds the database
        db.execute("ROLLBACK")
        assert db.execute("SELECT count(*) FROM sessions").fetchone() == (1,)
    finally:
        db.close()


CASES = [  # acp, where the hang was seen, at every delay; serve (the same close path) at fewer
    *(("serve", "eof", signal.SIGTERM, d) for d in (0.0, 0.02)),
    ("serve", "eof", signal.SIGHUP, 0.003),
    ("serve", "exit", signal.SIGTERM, 0.0),
    *(("acp", "eof", signal.SIGTERM, d) for d in DELAYS),
    ("acp", "eof", signal.SIGHUP, 0.003),
    ("acp", "signal only", signal.SIGTERM, 0.0),
]


@pytest.mark.parametrize(("frontend", "stop", "signum", "delay"), CASES)
async def test_issue28_every_shutdown_path_exits_promptly_with_the_store_closed(
    frontend, stop, signum, delay, tmp_path
):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    proc = await started(frontend, home, work)
    assert proc.stdin is not None
    try:
        if stop == "exit":
            proc.stdin.write(lsp("shutdown", None, 3) + lsp("exit", None))
            await proc.stdin.drain()
        if stop != "signal only":
            proc.stdin.close()
        if delay:
            await asyncio.sleep(delay)
        with contextlib.suppress(ProcessLookupError):  # it had already gone: nothing to race
            os.kill(proc.pid, signum)
        await asyncio.wait_for(proc.wait(), EXIT_BOUND_S)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    log = log_path(home).read_text(errors="replace")
    assert "Traceback" not in log and "CancelledError" not in log, log
    check_store(home)
