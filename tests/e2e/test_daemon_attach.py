"""B-DAEMON-1 end to end: a turn outlives its client, its approval waits, and clients attached later see
everything, in order, once; several clients share one session's stream and approvals (docs/DAEMON.md).

Every client is a real ``threadline connect`` bridge to a real daemon; a client "crashes" by SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from server.cli.client import Client, RpcError
from tests.e2e.daemon_support import (
    bridge,
    daemon_env,
    fake_fixture,
    kinds,
    listed,
    never_answer,
    open_home_fixture,
    session_updates,
    wait_for,
    wait_until,
    write_call,
)
from tests.harness import start_client

pytestmark = pytest.mark.asyncio
open_home = open_home_fixture()
fake = fake_fixture()


def seqs(updates: list[dict[str, Any]]) -> list[int]:
    return [u["seq"] for u in updates]


async def test_B_DAEMON_1_a_turn_outlives_its_client_and_its_approval_waits_for_a_reattach(open_home, fake, folder):
    home = open_home
    (home / "config.toml").write_text(
        # Confined like every hook (B-HOOK-2): it writes where the session's sandbox lets it, the session folder
        f'[[hooks.Notification]]\ncommand = "touch {home}/escaped; cat > {folder}/notified.json"\nmatcher = "permission_prompt"\n'
    )
    env = daemon_env(home, fake)
    fake.push(write_call("call_w", "out.txt", "done\n"), {"content": "all done"})
    first = await bridge(env, home)
    first.on_request = never_answer
    sid = (await first.request("createSession", {"cwd": str(folder)}))["sessionId"]
    first.start_request("submitTurn", {"sessionId": sid, "text": "write out.txt"})
    await wait_for(lambda: first.server_requests, what="the approval request")
    seen_by_first = session_updates(first, sid)
    first.proc.kill()  # the editor dies with its question open
    await first.proc.wait()

    watcher = await bridge(env, home)  # a second terminal: sees, never answers
    answerer = await bridge(env, home)
    try:
        state = await wait_until(
            lambda: _waiting_alone(watcher, sid), what="the session running, waiting, with no client attached"
        )
        assert state["running"] and state["waitingForApproval"] and state["attachedClients"] == 0
        await wait_for(lambda: (folder / "notified.json").exists(), what="the Notification hook")
        notified = json.loads((folder / "notified.json").read_text())
        assert not (home / "escaped").exists()  # the data folder is hidden from it, as from any command
        assert notified["hook_event_name"] == "Notification" and notified["session_id"] == sid
        assert notified["notification_type"] == "permission_prompt" and notified["cwd"] == str(folder)
        assert "write" in notified["message"].lower() or "out.txt" in notified["message"]

        watcher.on_request = never_answer
        everything = await watcher.request("attachSession", {"sessionId": sid, "sinceSeq": 0})
        assert everything["running"] and everything["waitingForApproval"] and "truncated" not in everything
        await wait_for(lambda: watcher.server_requests, what="the waiting approval, sent to the new client")

        answerer.on_request = lambda method, params: {"decision": "allowOnce"}
        last_seen = seen_by_first[-1]["seq"]
        resumed = await answerer.request("attachSession", {"sessionId": sid, "sinceSeq": last_seen})
        assert resumed["seq"] >= last_seen
        for client in (watcher, answerer):
            await _until_completed(client, sid)

        assert (folder / "out.txt").read_text() == "done\n"
        whole, missed = session_updates(watcher, sid), session_updates(answerer, sid)
        assert seqs(whole) == list(range(1, len(whole) + 1)), "the attach from 0 replays everything, in order, once"
        assert seqs(missed) == list(range(last_seen + 1, whole[-1]["seq"] + 1)), "no gap, no duplicate after sinceSeq"
        assert seen_by_first + missed == whole, "every client saw the same stream"
        assert kinds(whole)[0] == "turnStarted" and kinds(whole)[-1] == "turnCompleted"
        # the answer of one withdrew the question from the other
        asked = watcher.server_requests[0]["id"]
        await wait_for(lambda: ("$/cancelRequest", {"id": asked}) in watcher.notifications, what="the withdrawal")
        after = await listed(answerer, sid)
        assert not after["running"] and not after["waitingForApproval"] and after["attachedClients"] == 2
    finally:
        await watcher.close()
        await answerer.close()


async def _until_completed(client: Client, sid: str) -> None:
    await wait_for(lambda: "turnCompleted" in kinds(session_updates(client, sid)), what="the turn's end")


async def _waiting_alone(client, sid: str) -> dict[str, Any] | None:
    state = await listed(client, sid)
    return state if state["waitingForApproval"] and state["attachedClients"] == 0 else None


async def test_B_DAEMON_1_the_first_answer_wins_and_a_late_one_changes_nothing(open_home, fake, folder):
    home = open_home
    env = daemon_env(home, fake)
    fake.push(write_call("call_w", "kept.txt", "yes\n"), {"content": "written"})
    slow, quick = await bridge(env, home), await bridge(env, home)
    try:
        sid = (await slow.request("createSession", {"cwd": str(folder)}))["sessionId"]
        await quick.request("attachSession", {"sessionId": sid})
        release = asyncio.Event()

        async def answer_late(method: str, params: Any) -> dict[str, str]:
            await release.wait()  # until the other client's answer has withdrawn this question
            return {"decision": "reject"}

        slow.on_request = answer_late
        quick_asked = asyncio.Event()

        async def answer_once_both_asked(method: str, params: Any) -> dict[str, str]:
            quick_asked.set()
            await wait_for(lambda: slow.server_requests, what="the question reaching the other client")
            return {"decision": "allowOnce"}

        quick.on_request = answer_once_both_asked
        result = await asyncio.wait_for(slow.request("submitTurn", {"sessionId": sid, "text": "write it"}), 60)
        assert result["stopReason"] == "endTurn"
        slow_id = slow.server_requests[0]["id"]
        await wait_for(lambda: ("$/cancelRequest", {"id": slow_id}) in slow.notifications, what="the withdrawal")
        release.set()  # the late answer goes out now, after the turn went on
        await asyncio.sleep(0.2)
        assert (folder / "kept.txt").read_text() == "yes\n"
        items = (await quick.request("readTranscript", {"sessionId": sid}))["items"]
        tool = next(i for i in items if i["role"] == "tool")
        assert "kept.txt" in tool["content"] and "denied" not in tool["content"].lower()
        assert len(slow.server_requests) == len(quick.server_requests) == 1
        a, b = session_updates(slow, sid), session_updates(quick, sid)
        assert a == b and seqs(a) == list(range(a[0]["seq"], a[0]["seq"] + len(a)))
    finally:
        await slow.close()
        await quick.close()


async def test_B_DAEMON_1_steer_and_cancel_from_another_client(open_home, fake, folder):
    home = open_home
    env = daemon_env(home, fake)
    fake.push({"content": "counting " * 60, "chunks": 60, "chunk_delay": 0.1})
    owner, other = await bridge(env, home), await bridge(env, home)
    try:
        sid = (await owner.request("createSession", {"cwd": str(folder)}))["sessionId"]
        _, turn = owner.start_request("submitTurn", {"sessionId": sid, "text": "count"})
        await wait_for(lambda: "assistantDelta" in kinds(session_updates(owner, sid)), what="the answer streaming")
        attached = await other.request("attachSession", {"sessionId": sid})
        assert attached["running"]
        steered = await other.request("steerTurn", {"sessionId": sid, "text": "and count faster"})
        assert steered["turnId"] == session_updates(owner, sid)[0]["turnId"]
        replayed = session_updates(other, sid)
        assert kinds(replayed)[0] == "turnStarted", "without sinceSeq the running turn is replayed from its start"
        assert (await other.request("cancelTurn", {"sessionId": sid}))["cancelled"]
        assert (await asyncio.wait_for(turn, 60))["stopReason"] == "cancelled"
        await wait_for(lambda: "turnCompleted" in kinds(session_updates(other, sid)), what="the end, seen by both")
        assert session_updates(other, sid) == session_updates(owner, sid)[-len(session_updates(other, sid)) :]
        too_new = await other.request("attachSession", {"sessionId": sid, "sinceSeq": 10**6})
        assert too_new["truncated"] is True, "a seq from another life of the daemon is no resume point"
        with pytest.raises(RpcError) as unknown:
            await other.request("attachSession", {"sessionId": "ses_nope"})
        assert unknown.value.code == -32602 and unknown.value.data["code"] == "SessionNotFound"
        assert (await other.request("detachSession", {"sessionId": sid}))["detached"]
        assert not (await other.request("detachSession", {"sessionId": sid}))["detached"]
    finally:
        await owner.close()
        await other.close()


async def test_B_DAEMON_1_stdio_serve_numbers_its_updates_and_attaches_too(home, fake, folder):
    """One client, one server: it receives every update as before, now numbered, and may attach to resume."""
    client = await start_client(home, fake.url)
    try:
        assert client.initialize_result["capabilities"]["experimental"]["threadline"]["daemon"] is False
        fake.push({"content": "hello there"})
        sid = (await client.request("createSession", {"cwd": str(folder)}))["sessionId"]
        await asyncio.wait_for(client.request("submitTurn", {"sessionId": sid, "text": "hi"}), 60)
        seen = session_updates(client, sid)
        assert seqs(seen) == list(range(1, len(seen) + 1))
        user = next(u for u in seen if u["update"]["kind"] == "userMessage")
        items = (await client.request("readTranscript", {"sessionId": sid}))["items"]
        assert next(i for i in items if i["seq"] == user["messageSeq"])["content"] == "hi"
        state = await client.request("attachSession", {"sessionId": sid, "sinceSeq": 0})
        assert state == {"sessionId": sid, "seq": len(seen), "running": False, "waitingForApproval": False}
        assert session_updates(client, sid) == seen, "it already has everything: nothing is sent twice"
        info = await listed(client, sid)
        assert (info["running"], info["waitingForApproval"], info["attachedClients"]) == (False, False, 1)
    finally:
        await client.close()


async def test_B_DAEMON_1_a_client_that_submits_to_a_session_is_attached_to_it(open_home, fake, folder):
    home = open_home
    env = daemon_env(home, fake)
    creator, submitter = await bridge(env, home), await bridge(env, home)
    try:
        sid = (await creator.request("createSession", {"cwd": str(folder)}))["sessionId"]
        fake.push({"content": "first"}, {"content": "second"})
        first = await asyncio.wait_for(submitter.request("submitTurn", {"sessionId": sid, "text": "one"}), 60)
        assert first["stopReason"] == "endTurn"
        mine = session_updates(submitter, sid)
        assert kinds(mine)[0] == "turnStarted" and kinds(mine)[-1] == "turnCompleted"
        await wait_for(lambda: session_updates(creator, sid) == mine, what="the creator seeing the same stream")
        assert (await listed(creator, sid))["attachedClients"] == 2
        second = await asyncio.wait_for(creator.request("submitTurn", {"sessionId": sid, "text": "two"}), 60)
        assert second["stopReason"] == "endTurn"
        await wait_for(lambda: len(session_updates(submitter, sid)) == len(session_updates(creator, sid)))
        both = session_updates(creator, sid)
        assert seqs(both) == list(range(1, len(both) + 1))
    finally:
        await creator.close()
        await submitter.close()
