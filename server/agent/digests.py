"""The last request sent to the provider, and how much of the next one repeats it (``stablePrefixTokens``).

In memory as sent (``record_sent``: costs nothing per call); in the store as one digest a message, once per turn
at its end (``keep_sent``), so a restarted server, or one that let go of the session, still compares with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from server.context import estimate_message_tokens
from server.transcript import Store
from server.transcript.view_state import DIGEST_SIZE


@dataclass
class SentRequest:
    """The last request sent for one session, held by its handle (``server.sessions.Session.sent``); rebuilt from
    the store (``let_go``)."""

    session_id: str
    messages: Sequence[dict[str, Any]] | None = None  # the last request this process sent, as sent
    digests: list[bytes] | None = None  # else the last one stored, a digest a message (None: not read)

    def let_go(self) -> None:
        self.messages = self.digests = None


def request_digests(messages: Sequence[dict[str, Any]]) -> list[bytes]:
    """One digest per message, equal for equal messages whatever their keys' order."""
    return [
        hashlib.blake2b(msgspec.json.encode(msg, order="sorted"), digest_size=DIGEST_SIZE).digest() for msg in messages
    ]


def record_sent(sent: SentRequest, messages: Sequence[dict[str, Any]]) -> None:
    """Remember what was just sent to the provider (for ``stable_prefix_tokens``). The request's list is kept as
    it is (the loop never changes a view after sending it); ``keep_sent`` stores it."""
    sent.messages, sent.digests = messages, None


async def keep_sent(store: Store, sent: SentRequest) -> None:
    """Store the last request sent, as digests. Once per turn, at its end: hashing a large request at every call
    would add to each iteration what the provider's answer is waited for anyway."""
    if sent.messages is not None:
        await store.save_sent_request(sent.session_id, b"".join(request_digests(sent.messages)))


async def stable_prefix_tokens(store: Store, sent: SentRequest, messages: Sequence[dict[str, Any]]) -> int:
    """Tokens of the longest run of leading ``messages`` equal to the last request sent: what a provider's prompt
    cache could serve (B-CACHE-1). 0 when nothing was ever sent for the session."""
    if sent.messages is not None:  # sent by this process: compared as it was sent
        same = (a == b for a, b in zip(sent.messages, messages))
    else:  # sent before a restart: compared by digest
        if sent.digests is None:
            sent.digests = await store.sent_request(sent.session_id) or []
        previous = sent.digests
        same = (a == b for a, b in zip(previous, request_digests(messages[: len(previous)])))
    total = 0
    for equal, msg in zip(same, messages):
        if not equal:
            break
        total += estimate_message_tokens(msg)
    return total
