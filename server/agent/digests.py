"""The last request sent to the provider, and how much of the next one repeats it (``stablePrefixTokens``).

In memory as sent (``record_sent``: costs nothing per call); in the store as one digest a message, once per turn
at its end (``keep_sent``), so a restarted server, or one that let go of the session, still compares with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec

from server.context import estimate_message_tokens
from server.sessions import Session
from server.transcript import Store
from server.transcript.view_state import DIGEST_SIZE


def request_digests(messages: Sequence[dict[str, Any]]) -> list[bytes]:
    """One digest per message, equal for equal messages whatever their keys' order."""
    return [
        hashlib.blake2b(msgspec.json.encode(msg, order="sorted"), digest_size=DIGEST_SIZE).digest() for msg in messages
    ]


def record_sent(session: Session, messages: Sequence[dict[str, Any]]) -> None:
    """Remember what was just sent to the provider (for ``stable_prefix_tokens``). The request's list is kept as
    it is (the loop never changes a view after sending it); ``keep_sent`` stores it."""
    session.sent, session.sent_digests = messages, None


async def keep_sent(store: Store, session: Session) -> None:
    """Store the last request sent, as digests. Once per turn, at its end: hashing a large request at every call
    would add to each iteration what the provider's answer is waited for anyway."""
    if session.sent is not None:
        await store.save_sent_request(session.id, b"".join(request_digests(session.sent)))


async def stable_prefix_tokens(store: Store, session: Session, messages: Sequence[dict[str, Any]]) -> int:
    """Tokens of the longest run of leading ``messages`` equal to the last request sent: what a provider's prompt
    cache could serve (B-CACHE-1). 0 when nothing was ever sent for the session."""
    if session.sent is not None:  # sent by this process: compared as it was sent
        same = (a == b for a, b in zip(session.sent, messages))
    else:  # sent before a restart: compared by digest
        if session.sent_digests is None:
            session.sent_digests = await store.sent_request(session.id) or []
        previous = session.sent_digests
        same = (a == b for a, b in zip(previous, request_digests(messages[: len(previous)])))
    total = 0
    for equal, msg in zip(same, messages):
        if not equal:
            break
        total += estimate_message_tokens(msg)
    return total
