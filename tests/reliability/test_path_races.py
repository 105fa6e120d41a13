"""Paths that change under the server while it uses them, through real turns and real threads.

- A folder swapped, over and over, for a link to ``.git`` while ``write_file``/``edit_file`` write into it: the
  check and the write are one walk (``server.project.workspace.open_inside``), so ``.git/config`` never changes.
- A link loop (and a path vanishing) makes ``Path.resolve()`` raise: each is one failed tool call, never a
  failed turn (-32603), whichever tool, approval check, checkpoint or ``@path`` meets it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from server.cli.client import Client
from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY
from tests.reliability.support import start, turn, updates

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key=API_KEY) as provider:
        yield provider


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(tmp_path_factory, fake) -> AsyncIterator[Client]:
    home = tmp_path_factory.mktemp("races") / "home"
    home.mkdir()
    client = await start(home, fake.url, OPENAI_API_KEY=API_KEY)
    yield client
    await client.close()


def call(n: int, name: str, **arguments) -> dict:
    return {"id": f"call_{n}", "name": name, "arguments": arguments}


async def run_calls(server: Client, fake: FakeProvider, sid: str, calls: list[dict], text: str = "go") -> list[dict]:
    fake.reset()
    fake.push({"tool_calls": calls}, {"content": "done"})
    result = await turn(server, sid, text)
    assert result["stopReason"] == "endTurn", result
    return [u for u in updates(server, sid, "toolResult") if u["toolCallId"] in {c["id"] for c in calls}]


async def test_B_SBX_4_a_folder_swapped_for_a_link_to_git_never_gets_a_write_into_git_config(server, fake, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    config = (work / ".git" / "config").read_bytes()
    sub, parked = work / "sub", work / "sub-real"
    sub.mkdir()
    (sub / "config").write_text("[core]\n")
    stop, swaps = threading.Event(), [0]

    def swapper() -> None:  # a background process of the agent's, racing the server's writes
        while not stop.is_set():
            try:
                os.rename(sub, parked)
                os.symlink(".git", sub)
                os.unlink(sub)
                os.rename(parked, sub)
                swaps[0] += 1
            except OSError:
                pass

    sid = (await server.request("createSession", {"cwd": str(work), "approvalPolicy": "auto"}))["sessionId"]
    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        for round_ in range(6):
            calls = [
                call(round_ * 100 + i, "write_file", path="sub/config", content="[core]\n\tfsmonitor = x\n")
                for i in range(20)
            ]
            calls += [
                call(
                    round_ * 100 + 50 + i,
                    "edit_file",
                    path="sub/config",
                    old_string="[core]",
                    new_string="[core]\n\tfsmonitor = x",
                )
                for i in range(10)
            ]
            await run_calls(server, fake, sid, calls)
            assert (work / ".git" / "config").read_bytes() == config
            await asyncio.sleep(0)
    finally:
        stop.set()
        thread.join()
    assert swaps[0] > 0
    assert (work / ".git" / "config").read_bytes() == config
    assert not [p for p in (work / ".git").iterdir() if p.name.endswith(".threadline-tmp")]


async def test_a_link_loop_or_a_vanishing_path_is_one_failed_tool_call_not_a_failed_turn(server, fake, tmp_path):
    work = tmp_path / "loop"
    work.mkdir()
    os.symlink("b", work / "a")
    os.symlink("a", work / "b")
    (work / "self").symlink_to("self/x")
    (work / "AGENTS.md").symlink_to("AGENTS.md")  # read into the first turn's frozen context
    calls = [
        call(0, "write_file", path="a/x.txt", content="x"),
        call(1, "read_file", path="a"),
        call(2, "edit_file", path="b/y.txt", old_string="1", new_string="2"),
        call(3, "list_files", path="a"),
        call(4, "search_files", pattern="x", path="b"),
        call(5, "write_file", path="self", content="x"),
        call(6, "read_file", path="gone/x.txt"),
    ]
    for policy in ("ask", "autoEdit", "auto"):  # the approval check resolves the path too
        sid = (await server.request("createSession", {"cwd": str(work), "approvalPolicy": policy}))["sessionId"]
        results = await run_calls(server, fake, sid, calls, text="see @a and @self")
        assert len(results) == len(calls)
        assert all(r["status"] in ("error", "denied") for r in results), results
        assert any("symbolic links" in r["content"] or "resolved" in r["content"] for r in results), results


async def test_B_SBX_4_rewind_through_a_folder_swapped_for_a_link_to_git_never_touches_git(server, fake, tmp_path):
    """The turn created ``sub/config`` and ``sub/hooks/pre-commit``; then ``sub`` became a link to ``.git``. A
    forced rewind (remove what the turn created) must not remove or rewrite ``.git``'s files."""
    work = tmp_path / "rewind"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    before = {p: p.read_bytes() for p in (work / ".git").rglob("*") if p.is_file()}
    sid = (await server.request("createSession", {"cwd": str(work), "approvalPolicy": "auto"}))["sessionId"]
    calls = [
        call(0, "write_file", path="sub/config", content="[user]\n"),
        call(1, "write_file", path="sub/hooks/pre-commit", content="echo hi\n"),
    ]
    results = await run_calls(server, fake, sid, calls)
    assert [r["status"] for r in results] == ["ok", "ok"], results
    turn_id = (
        updates(server, sid, "toolResult")[0].get("turnId")
        or (await server.request("listCheckpoints", {"sessionId": sid}))["turns"][0]["turnId"]
    )
    os.rename(work / "sub", work / "sub-real")
    os.symlink(".git", work / "sub")
    answer = await server.request("rewindFiles", {"sessionId": sid, "toTurnId": turn_id, "force": True})
    assert {f["status"] for f in answer["files"]} == {"conflicted"}, answer
    assert {p: p.read_bytes() for p in (work / ".git").rglob("*") if p.is_file()} == before
