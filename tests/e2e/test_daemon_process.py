"""The daemon as a process (B-DAEMON-1, docs/DAEMON.md): one per home however many clients start it at once, a
SIGKILL loses nothing stored and the next ``connect`` starts a fresh one on the same sessions, it leaves when idle
but never while a turn runs, and another user cannot reach it (folder permissions, and ``SO_PEERCRED`` when those
are loosened)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import stat
import subprocess
import sys

import pytest

from tests.e2e.daemon_support import (
    bridge,
    daemon_env,
    daemon_pid,
    fake_fixture,
    kinds,
    open_home_fixture,
    session_updates,
    stop_daemon,
    wait_for,
    wait_gone,
)
from tests.harness import REPO

pytestmark = pytest.mark.asyncio
open_home = open_home_fixture()
fake = fake_fixture()

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


async def test_clients_starting_at_once_share_one_daemon(open_home, fake):
    home = open_home
    env = daemon_env(home, fake)
    clients = await asyncio.gather(*(bridge(env, home) for _ in range(5)))
    try:
        pid = daemon_pid(home)
        assert pid is not None
        assert all(c.initialize_result["capabilities"]["experimental"]["threadline"]["daemon"] for c in clients)
        sid = (await clients[0].request("createSession", {"cwd": str(home)}))["sessionId"]
        for client in clients[1:]:
            sessions = (await client.request("listSessions", {}))["sessions"]
            assert [s["sessionId"] for s in sessions] == [sid], "every client reached the same daemon"
        # a daemon started by hand on a home that has one leaves at once, leaving the first alone
        second = subprocess.run(
            [sys.executable, "-m", "server", "daemon"], env=env, cwd=REPO, capture_output=True, timeout=60
        )
        assert second.returncode == 0 and b"already runs" in second.stderr
        assert daemon_pid(home) == pid
        folder = home / "daemon"
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE((folder / "threadline.sock").stat().st_mode) == 0o600
    finally:
        for client in clients:
            await client.close()


async def test_a_sigkilled_daemon_loses_nothing_stored_and_the_next_connect_starts_a_fresh_one(open_home, fake, folder):
    home = open_home
    env = daemon_env(home, fake)
    fake.push({"content": "a long answer that keeps coming " * 20, "chunks": 40, "chunk_delay": 0.1})
    client = await bridge(env, home)
    sid = (await client.request("createSession", {"cwd": str(folder)}))["sessionId"]
    client.start_request("submitTurn", {"sessionId": sid, "text": "talk for a while"})
    await wait_for(lambda: kinds(session_updates(client, sid)).count("assistantDelta") >= 5, what="deltas")
    first = daemon_pid(home)
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert wait_gone(first)
    await asyncio.wait_for(client.proc.wait(), 30)  # the bridge ends with its connection
    assert (home / "daemon" / "threadline.sock").exists(), "the killed daemon's socket is left behind"

    fake.push({"content": "carrying on"})
    again = await bridge(env, home)
    try:
        second = daemon_pid(home)
        assert second is not None and second != first
        items = (await again.request("readTranscript", {"sessionId": sid}))["items"]
        assert [i["role"] for i in items if i["role"] != "system"] == ["user", "assistant"]
        assert items[-1]["status"] == "interrupted" and items[-1]["content"]
        result = await asyncio.wait_for(again.request("submitTurn", {"sessionId": sid, "text": "go on"}), 60)
        assert result["stopReason"] == "endTurn"
    finally:
        await again.close()


async def test_the_daemon_leaves_when_idle_but_never_while_a_turn_runs(open_home, fake, folder):
    home = open_home
    env = daemon_env(home, fake, THREADLINE_DAEMON_IDLE_SECONDS="1")
    fake.push({"content": "slowly " * 40, "chunks": 40, "chunk_delay": 0.3})
    client = await bridge(env, home)
    sid = (await client.request("createSession", {"cwd": str(folder)}))["sessionId"]
    client.start_request("submitTurn", {"sessionId": sid, "text": "take your time"})
    await wait_for(lambda: "assistantDelta" in kinds(session_updates(client, sid)), what="the turn running")
    pid = daemon_pid(home)
    assert pid is not None
    client.proc.kill()  # no client left; the turn runs on for seconds, several idle limits
    await client.proc.wait()
    await asyncio.sleep(2.5)
    assert daemon_pid(home) == pid, "the daemon left while a turn was running"
    assert await asyncio.to_thread(wait_gone, pid, 90), "the daemon did not leave once idle"
    assert not (home / "daemon" / "threadline.sock").exists()
    watcher = await bridge(env, home)  # a fresh daemon: the turn finished and was stored
    try:
        items = (await watcher.request("readTranscript", {"sessionId": sid}))["items"]
        assert items[-1]["role"] == "assistant" and items[-1]["status"] == "complete"
    finally:
        await watcher.close()


def _as_nobody(home, *extra: str) -> subprocess.CompletedProcess[bytes]:
    """Another user's attempt: connect to the socket, send initialize, report what came back."""
    script = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        f"    s.connect({str(home / 'daemon' / 'threadline.sock')!r})\n"
        "except OSError as e:\n"
        "    print('refused', e.errno); sys.exit(3)\n"
        'body=b\'{"jsonrpc":"2.0","id":1,"method":"listSessions","params":{}}\'\n'
        "try:\n"
        "    s.sendall(b'Content-Length: %d\\r\\n\\r\\n' % len(body) + body)\n"
        "    s.settimeout(30); data=s.recv(65536)\n"
        "except OSError as e:\n"
        "    data=b''\n"
        "print('got', len(data)); sys.exit(0 if data else 4)\n"
    )
    return subprocess.run([*NOBODY, sys.executable, "-c", script], capture_output=True, timeout=60)


@pytest.mark.skipif(
    shutil.which("setpriv") is None or os.getuid() != 0, reason="needs setpriv and root to be another user"
)
async def test_another_user_cannot_reach_the_daemon(open_home, fake):
    home = open_home
    env = daemon_env(home, fake)
    client = await bridge(env, home)
    try:
        blocked = await asyncio.to_thread(_as_nobody, home)
        assert blocked.returncode == 3, blocked  # the folder (0700) stops it before the socket
        assert b"refused 13" in blocked.stdout  # EACCES
        # Loosened by hand: the socket is reachable, and SO_PEERCRED refuses the peer all the same
        os.chmod(home / "daemon", 0o755)
        os.chmod(home / "daemon" / "threadline.sock", 0o666)
        refused = await asyncio.to_thread(_as_nobody, home)
        assert refused.returncode == 4 and b"got 0" in refused.stdout, refused
        log = (home / "logs" / "daemon.log").read_text()
        assert "refused a connection from uid 65534" in log
        assert (await client.request("listSessions", {}))["sessions"] == []  # ours still served
    finally:
        await client.close()


async def test_a_home_deeper_than_a_socket_path_allows_still_works(open_home, fake):
    deep = open_home / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    assert len(str(deep / "daemon" / "threadline.sock")) > 108  # sun_path's size on Linux
    client = await bridge(daemon_env(deep, fake), deep)
    try:
        assert (await client.request("listSessions", {}))["sessions"] == []
        assert daemon_pid(deep) is not None
    finally:
        await client.close()
        stop_daemon(deep)
