"""What the fault-injection tests share: a real server process on a temp data folder, wired to the model-service
double, that a test can SIGKILL and start again on the same folder.

Nothing here stands in for our code: the server is ``python -m server serve`` over stdio, the store a real SQLite
file, the provider the fake's real HTTP server. The server's stderr goes to ``<home>.log`` next to the folder,
so key-leak tests can grep the logs too (``tests/harness.py`` starts it).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from server.cli.client import Client
from tests.context.protocol_check import is_protocol_valid
from tests.harness import API_KEY as API_KEY  # re-exported for older imports; new code imports tests.harness
from tests.harness import REPO as REPO
from tests.harness import initialize, server_env, start_server
from tests.harness import log_path as log_path


async def start(
    home: Path, fake_url: str | None = None, *, args: tuple[str, ...] = (), options: dict | None = None, **env: str
) -> Client:
    """An initialized client of a fresh server on ``home`` (approvals: auto; any request is allowed once)."""
    proc = await start_server(
        home,
        "serve",
        "--log-level",
        "INFO",
        *args,
        env=server_env(home, fake_url, **{"THREADLINE_APPROVAL_POLICY": "auto", **env}),
    )
    client = Client(proc)
    client.on_request = lambda method, params: {"decision": "allowOnce"}
    return await initialize(client, options)


async def sigkill(client: Client) -> None:
    """The crash: SIGKILL, no shutdown, nothing flushed by us."""
    client.proc.kill()
    await client.proc.wait()
    await asyncio.wait([client._reader], timeout=5)
    for fut in client._pending.values():  # the requests in flight died with it; that is the point
        if fut.done() and not fut.cancelled():
            fut.exception()


def updates(client: Client, sid: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [
        dict(p["update"], seq=p.get("messageSeq"))
        for m, p in list(client.notifications)
        if m == "sessionUpdate" and p["sessionId"] == sid and (kind is None or p["update"]["kind"] == kind)
    ]


async def wait_for(predicate, timeout: float = 15, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.01)


async def transcript(client: Client, sid: str) -> list[dict[str, Any]]:
    items, after = [], None
    while True:
        params: dict[str, Any] = {"sessionId": sid, "limit": 1000}
        if after is not None:
            params["afterSeq"] = after
        page = await client.request("readTranscript", params)
        items += page["items"]
        after = page.get("nextSeq")
        if after is None:
            return items


async def turn(client: Client, sid: str, text: str, timeout: float = 30) -> dict[str, Any]:
    return await asyncio.wait_for(client.request("submitTurn", {"sessionId": sid, "text": text}), timeout)


async def assert_view_valid(client: Client, sid: str) -> dict[str, Any]:
    """R-REP-1/R-REP-2: the view the next call would send is protocol-valid."""
    view = await client.request("getContextView", {"sessionId": sid})
    assert is_protocol_valid(view["messages"]) == [], view["messages"]
    return view


def assert_seen_were_stored(seen: list[dict[str, Any]], items: list[dict[str, Any]]) -> None:
    """Every message the client was told about before the crash is stored, whole, under the same seq."""
    by_seq = {item["seq"]: item for item in items}
    assert [i["seq"] for i in items] == list(range(1, len(items) + 1)), "seqs must stay contiguous"
    for update in seen:
        if update["seq"] is None:
            continue
        item = by_seq.get(update["seq"])
        assert item is not None, f"message {update['seq']} ({update['kind']}) was announced but is not stored"
        if update["kind"] == "toolResult":
            assert item["role"] == "tool" and item["content"] == update["content"]
        elif update["kind"] == "assistantMessage":
            assert item["role"] == "assistant" and (item["content"] or "") == update["content"]
        elif update["kind"] == "userMessage":
            assert item["role"] == "user" and item["content"] == update["text"]


# Shell that sets $p to the serving process's pid as /proc knows it, walking up from the command: inside the
# server's PID namespace $PPID is no longer the server (the command's parent is its relay, outside the namespace).
# The pattern is written so the walk does not stop at the shell whose own command line holds it.
FIND_SERVER = (
    "p=$(cut -d' ' -f4 /proc/self/stat); "
    "while [ \"$p\" -gt 1 ] && ! tr '\\0' ' ' < /proc/$p/cmdline | grep -q -- '-m serve[r]'; "
    "do p=$(cut -d' ' -f4 /proc/$p/stat); done; "
)
