"""Where a session's updates and approval requests meet the connections attached to it (B-DAEMON-1).

Each session has a stream: its update counter (``seq``, +1 per update), the updates kept for a late attach (the
running turn's whole, and at least the last ``KEEP_UPDATES``), the connections attached and the approval requests
waiting for an answer. Every update is encoded once and written to every attached connection; an approval request
goes to every attached connection (and to each one that attaches while it waits), the first answer wins and the
others are withdrawn with ``$/cancelRequest``. With nobody attached, an approval simply waits.

Everything here runs on the event loop without awaiting between reading the kept updates and subscribing a
connection, so an attach can neither miss nor repeat an update. A connection made with ``everything=True`` (the
stdio server: one client, one server) receives every session's updates and approvals without attaching.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from protocol.updates import SessionUpdate
from server.edge.transport import frame
from server.services.core import Attached

log = logging.getLogger(__name__)

KEEP_UPDATES = 5000  # per session, besides the running turn's
KEEP_BYTES = 64 * 1024 * 1024  # per session, whatever runs: a turn streaming for hours is cut from its start
KEEP_STREAMS = 64  # sessions whose kept updates stay held when nobody is attached and no turn runs

APPROVAL = "requestApproval"


class Peer(Protocol):
    """One client connection as the hub sees it."""

    def send_frame(self, data: bytes) -> None:
        """Write one framed message (a notification)."""

    def request(self, method: str, params: Any) -> tuple[str, concurrent.futures.Future[Any]]:
        """Send a server -> client request; its id and the future of its answer."""

    def withdraw(self, msg_id: str) -> None:
        """Stop waiting for a request's answer and tell the client (``$/cancelRequest``)."""


@dataclass
class _Approval:
    """One approval request waiting for its first answer, sent to each attached peer."""

    params: dict[str, Any]
    answer: asyncio.Future[Any]
    streams: list[_Stream]
    sent: dict[Peer, str] = field(default_factory=dict)  # peer -> the id of the request it got
    told: bool = False  # the Notification hooks ran since the last peer got it


@dataclass
class _Stream:
    seq: int = 0
    kept: deque[tuple[int, bytes]] = field(default_factory=deque)
    kept_bytes: int = 0
    turn_first: int | None = None  # the running turn's first update (kept whole while it runs)
    peers: set[Peer] = field(default_factory=set)
    approvals: list[_Approval] = field(default_factory=list)

    def keep(self, seq: int, data: bytes, keep: int, keep_bytes: int) -> None:
        self.kept.append((seq, data))
        self.kept_bytes += len(data)
        while self.kept and (
            (len(self.kept) > keep and (self.turn_first is None or self.kept[0][0] < self.turn_first))
            or self.kept_bytes > keep_bytes
        ):
            self.kept_bytes -= len(self.kept.popleft()[1])


Unattended = Callable[[str, dict[str, Any]], None]  # (session id, approval params): nobody attached to answer


class Hub:
    def __init__(
        self, keep: int = KEEP_UPDATES, unattended: Unattended | None = None, keep_bytes: int = KEEP_BYTES
    ) -> None:
        self.keep, self.keep_bytes = keep, keep_bytes
        self._streams: dict[str, _Stream] = {}
        self._held: OrderedDict[str, None] = OrderedDict()  # sessions whose kept updates are held, oldest first
        self._everything: set[Peer] = set()  # stdio: receives every session's traffic
        self._peers: set[Peer] = set()
        self._unattended = unattended or (lambda _sid, _params: None)

    # --- connections ---------------------------------------------------------------------------------------

    def join(self, peer: Peer, everything: bool = False) -> None:
        self._peers.add(peer)
        if everything:
            self._everything.add(peer)

    def leave(self, peer: Peer) -> None:
        """A connection ended: it is detached from every session; approvals it held wait for the others."""
        self._peers.discard(peer)
        self._everything.discard(peer)
        for session_id, stream in list(self._streams.items()):
            if peer in stream.peers:
                self._detach(session_id, stream, peer, withdraw=False)

    @property
    def connections(self) -> int:
        return len(self._peers)

    def attach(self, peer: Peer, session_id: str, since_seq: int | None, replay: bool = True) -> Attached:
        """Replay what ``peer`` missed, then subscribe it, in one step (nothing can be published in between).

        ``since_seq`` None: the running turn's updates (none when idle); else every kept update after it; with
        ``replay`` false, none (a connection that starts a turn sees it from its start). ``truncated``: some of
        those are no longer kept, or ``since_seq`` is from another life of the server (beyond the counter).
        """
        stream = self._stream(session_id)
        running_from = stream.seq if stream.turn_first is None else stream.turn_first - 1
        since = running_from if since_seq is None else since_seq
        oldest = stream.kept[0][0] if stream.kept else stream.seq + 1
        truncated = since > stream.seq or since + 1 < oldest
        if replay and peer not in self._everything:
            for seq, data in stream.kept:
                if seq > since:
                    peer.send_frame(data)
        stream.peers.add(peer)
        for approval in stream.approvals:
            self._ask_peer(approval, peer)
        return Attached(stream.seq, bool(stream.approvals), truncated)

    def detach(self, peer: Peer, session_id: str) -> bool:
        stream = self._streams.get(session_id)
        if stream is None or peer not in stream.peers:
            return False
        self._detach(session_id, stream, peer, withdraw=True)
        return True

    def attached(self, session_id: str) -> int:
        stream = self._streams.get(session_id)
        return len(stream.peers) if stream is not None else 0

    def waiting_for_approval(self, session_id: str) -> bool:
        stream = self._streams.get(session_id)
        return stream is not None and bool(stream.approvals)

    # --- what the core sends -------------------------------------------------------------------------------

    def publish(self, method: str, params: Any) -> None:
        """A notification from the core: a ``sessionUpdate`` is numbered, kept and sent to the session's peers
        (a subagent's also to its parent's); anything else goes to every connection."""
        if method != "sessionUpdate" or not isinstance(params, SessionUpdate):
            data = frame(msgspec.json.encode({"jsonrpc": "2.0", "method": method, "params": params}))
            for peer in list(self._peers):
                peer.send_frame(data)
            return
        stream = self._stream(params.session_id)
        stream.seq += 1
        seq = stream.seq
        kind = type(params.update).__struct_config__.tag
        if kind == "turnStarted":
            stream.turn_first = seq
        payload = msgspec.to_builtins(params)
        payload["seq"] = seq
        data = frame(msgspec.json.encode({"jsonrpc": "2.0", "method": method, "params": payload}))
        if kind == "turnCompleted":
            stream.turn_first = None
        stream.keep(seq, data, self.keep, self.keep_bytes)
        for peer in self._receivers(stream, params.parent_session_id):
            peer.send_frame(data)

    async def ask(self, method: str, params: Any) -> Any:
        """An approval request of a session: to every attached peer; the first answer wins, the others are
        withdrawn; cancelling the asker (its turn ended) withdraws it everywhere."""
        fields = params if isinstance(params, dict) else msgspec.to_builtins(params)
        session_id, parent_id = fields.get("sessionId"), fields.get("parentSessionId")
        if method != APPROVAL or not isinstance(session_id, str):
            raise RuntimeError(f"the hub routes a session's approvals only, not {method}")
        ids = [session_id] + ([parent_id] if isinstance(parent_id, str) else [])
        approval = _Approval(fields, asyncio.get_running_loop().create_future(), [self._stream(i) for i in ids])
        for stream in approval.streams:
            stream.approvals.append(approval)
        try:
            for peer in self._receivers(approval.streams[0], ids[1] if len(ids) > 1 else None):
                self._ask_peer(approval, peer)
            self._maybe_unattended(session_id, approval)
            return await approval.answer
        finally:
            for stream in approval.streams:
                stream.approvals.remove(approval)
            for peer, msg_id in list(approval.sent.items()):
                peer.withdraw(msg_id)  # the others' prompts (all of them when the asker was cancelled)
            approval.sent.clear()

    # --- inside --------------------------------------------------------------------------------------------

    def _stream(self, session_id: str) -> _Stream:
        stream = self._streams.get(session_id)
        if stream is None:
            stream = self._streams[session_id] = _Stream()
        self._held[session_id] = None
        self._held.move_to_end(session_id)
        self._let_go()
        return stream

    def _let_go(self) -> None:
        """Past ``KEEP_STREAMS``, an idle session nobody watches lets go of its kept updates (never its counter:
        a later attach is told ``truncated`` rather than handed numbers that start again)."""
        excess = len(self._held) - KEEP_STREAMS
        for session_id in list(self._held):
            if excess <= 0:
                return
            stream = self._streams[session_id]
            if stream.peers or stream.approvals or stream.turn_first is not None:
                continue
            stream.kept.clear()
            stream.kept_bytes = 0
            del self._held[session_id]
            excess -= 1

    def _receivers(self, stream: _Stream, parent_id: str | None) -> set[Peer]:
        peers = stream.peers | self._everything
        parent = self._streams.get(parent_id) if parent_id else None
        return peers | parent.peers if parent is not None else peers

    def _detach(self, session_id: str, stream: _Stream, peer: Peer, withdraw: bool) -> None:
        stream.peers.discard(peer)
        for approval in stream.approvals:
            if any(peer in s.peers for s in approval.streams):
                continue  # still attached through the other stream (a subagent's parent)
            msg_id = approval.sent.pop(peer, None)
            if msg_id is not None and withdraw:
                peer.withdraw(msg_id)
            self._maybe_unattended(session_id, approval)

    def _maybe_unattended(self, session_id: str, approval: _Approval) -> None:
        if not approval.sent and not approval.answer.done() and not approval.told:
            approval.told = True
            self._unattended(session_id, approval.params)

    def _ask_peer(self, approval: _Approval, peer: Peer) -> None:
        if peer in approval.sent or approval.answer.done():
            return
        msg_id, future = peer.request(APPROVAL, approval.params)
        approval.sent[peer] = msg_id
        approval.told = False
        loop = asyncio.get_running_loop()
        future.add_done_callback(lambda f: loop.call_soon_threadsafe(self._answered, approval, peer, f))

    def _answered(self, approval: _Approval, peer: Peer, future: concurrent.futures.Future[Any]) -> None:
        if approval.sent.get(peer) is None or approval.answer.done():
            return  # a late answer, or one from a peer that has left: it changes nothing
        del approval.sent[peer]
        if future.cancelled():
            return
        error = future.exception()
        if isinstance(error, ConnectionError):
            return
        if error is not None:
            approval.answer.set_exception(error)
        else:
            approval.answer.set_result(future.result())


class Attachments:
    """The hub as one connection sees it (``Core.clients``)."""

    def __init__(self, hub: Hub, peer: Peer) -> None:
        self.hub, self.peer = hub, peer

    def attach(self, session_id: str, since_seq: int | None, replay: bool = True) -> Attached:
        return self.hub.attach(self.peer, session_id, since_seq, replay)

    def detach(self, session_id: str) -> bool:
        return self.hub.detach(self.peer, session_id)

    def attached(self, session_id: str) -> int:
        return self.hub.attached(session_id)

    def waiting_for_approval(self, session_id: str) -> bool:
        return self.hub.waiting_for_approval(session_id)
