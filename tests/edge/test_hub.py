"""The hub that numbers a session's updates and shares them and its approvals among attached connections
(B-DAEMON-1), driven directly. The peers are the client's side of a connection: they record what reaches them."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from typing import Any

import pytest

from protocol.updates import AssistantDelta, SessionUpdate, TurnCompleted, TurnStarted
from server.edge.hub import Hub

SID = "ses_1"


class Peer:
    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.asked: dict[str, concurrent.futures.Future[Any]] = {}
        self.withdrawn: list[str] = []

    def send_frame(self, data: bytes) -> None:
        self.frames.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def request(self, method: str, params: Any) -> tuple[str, concurrent.futures.Future[Any]]:
        msg_id = f"{id(self)}-{len(self.asked)}"
        self.asked[msg_id] = concurrent.futures.Future()
        return msg_id, self.asked[msg_id]

    def withdraw(self, msg_id: str) -> None:
        self.withdrawn.append(msg_id)

    def seqs(self) -> list[int]:
        return [f["params"]["seq"] for f in self.frames if f["method"] == "sessionUpdate"]


def publish(hub: Hub, update: Any) -> None:
    hub.publish("sessionUpdate", SessionUpdate(session_id=SID, update=update, turn_id="turn_1"))


def test_B_DAEMON_1_an_attach_replays_what_followed_then_goes_live_without_gap_or_duplicate():
    hub, peer = Hub(), Peer()
    publish(hub, TurnStarted())
    for i in range(9):
        publish(hub, AssistantDelta(text=str(i)))
    attached = hub.attach(peer, SID, 4)
    assert attached.seq == 10 and not attached.truncated
    publish(hub, AssistantDelta(text="live"))
    assert peer.seqs() == list(range(5, 12))
    assert peer.frames[-1]["params"]["update"] == {"kind": "assistantDelta", "text": "live"}


def test_B_DAEMON_1_the_running_turn_is_kept_whole_and_older_updates_past_the_limit_are_not():
    hub, peer, late = Hub(keep=5), Peer(), Peer()
    publish(hub, TurnStarted())
    for i in range(20):
        publish(hub, AssistantDelta(text=str(i)))
    running = hub.attach(peer, SID, None)  # no sinceSeq: the running turn from its start
    assert not running.truncated and peer.seqs() == list(range(1, 22))
    publish(hub, TurnCompleted(stop_reason="endTurn"))
    later = hub.attach(late, SID, 0)
    assert later.truncated and late.seqs() == list(range(18, 23))
    assert hub.attach(Peer(), SID, 99).truncated, "a seq beyond the counter is from another life of the server"


def test_a_turn_streaming_past_the_byte_limit_is_kept_from_later_on():
    hub, peer = Hub(keep_bytes=2000), Peer()
    publish(hub, TurnStarted())
    for i in range(100):
        publish(hub, AssistantDelta(text=f"{i:04d}"))
    state = hub.attach(peer, SID, 0)
    assert state.truncated and peer.seqs() == list(range(peer.seqs()[0], 102)) and 1 < peer.seqs()[0] < 100


@pytest.mark.asyncio
async def test_B_DAEMON_1_the_first_answer_wins_and_the_other_copies_are_withdrawn():
    hub, one, two = Hub(), Peer(), Peer()
    hub.attach(one, SID, None)
    hub.attach(two, SID, None)
    asking = asyncio.ensure_future(hub.ask("requestApproval", {"sessionId": SID, "title": "write x"}))
    await asyncio.sleep(0)
    assert hub.waiting_for_approval(SID)
    (_, two_future), (one_id, one_future) = next(iter(two.asked.items())), next(iter(one.asked.items()))
    two_future.set_result({"decision": "allowOnce"})
    assert await asyncio.wait_for(asking, 5) == {"decision": "allowOnce"}
    assert one.withdrawn == [one_id] and two.withdrawn == []
    one_future.set_result({"decision": "reject"})  # late: changes nothing
    await asyncio.sleep(0)
    assert not hub.waiting_for_approval(SID)


@pytest.mark.asyncio
async def test_B_DAEMON_1_an_approval_waits_for_a_client_and_reaches_the_one_that_attaches():
    unattended: list[str] = []
    hub = Hub(unattended=lambda sid, params: unattended.append(sid))
    leaving, later = Peer(), Peer()
    hub.attach(leaving, SID, None)
    asking = asyncio.ensure_future(hub.ask("requestApproval", {"sessionId": SID, "title": "run make"}))
    await asyncio.sleep(0)
    assert unattended == [] and leaving.asked
    hub.leave(leaving)
    assert unattended == [SID], "the Notification hooks run once nobody can answer"
    assert hub.attached(SID) == 0 and hub.waiting_for_approval(SID)
    state = hub.attach(later, SID, None)
    assert state.waiting_for_approval and later.asked
    next(iter(later.asked.values())).set_result({"decision": "reject"})
    assert await asyncio.wait_for(asking, 5) == {"decision": "reject"}
    asking_again = asyncio.ensure_future(hub.ask("requestApproval", {"sessionId": SID}))
    await asyncio.sleep(0)
    asking_again.cancel()  # the turn ended: every copy is withdrawn
    with pytest.raises(asyncio.CancelledError):
        await asking_again
    assert later.withdrawn == [list(later.asked)[1]]
