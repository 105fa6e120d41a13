"""The recent safe tail (R-TAIL-1, R-TAIL-2, R-TAIL-3, B-TAIL-4).

The tail is kept verbatim by every compaction. It is chosen by tokens, never by message count, and never
starts at a tool result: the assistant message holding the call comes with it, and with it every result of
its parallel calls, even if that takes the tail over budget (a split pair is rejected by the provider; a few
extra tokens are not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .repair import SYSTEM_ROLES
from .tokens import estimate_message_tokens

__all__ = ["holder_index", "safe_tail_start"]


def holder_index(msgs: Sequence[Mapping[str, Any]], tool_index: int) -> int | None:
    """Index of the assistant message holding the call answered at ``tool_index``, or None for an orphan.

    The holder is the message right before the run of tool messages that contains ``tool_index`` (the
    OpenAI rule); it may be far back in tokens when the run of parallel results is large.
    """
    call_id = msgs[tool_index].get("tool_call_id")
    i = tool_index - 1
    while i >= 0 and msgs[i].get("role") == "tool":
        i -= 1
    if i < 0 or msgs[i].get("role") != "assistant":
        return None
    calls = msgs[i].get("tool_calls") or ()
    return i if any(isinstance(c, Mapping) and c.get("id") == call_id for c in calls) else None


def _align_to_protocol(msgs: Sequence[Mapping[str, Any]], start: int) -> int:
    """Move ``start`` off a tool result: back to its holder (R-TAIL-3, B-TAIL-4), else past the orphan run."""
    while start < len(msgs) and msgs[start].get("role") == "tool":
        holder = holder_index(msgs, start)
        if holder is not None:
            return holder
        start += 1  # Unrepaired input only: an orphan run cannot be made valid by moving back.
    return start


def safe_tail_start(
    msgs: Sequence[Mapping[str, Any]],
    keep_recent_tokens: int,
    token_counts: Sequence[int] | None = None,
) -> int:
    """Index in ``msgs`` where the safe tail starts (R-TAIL-1..3, B-TAIL-4).

    Walks back from the end adding each message's tokens while the total stays within
    ``keep_recent_tokens``; the last message is always kept (R-TAIL-2). System messages are skipped: they are
    kept separately and cost the tail nothing. The start is then moved back from a tool result to the
    assistant message holding its call (R-TAIL-3). Returns ``len(msgs)`` only when there is no
    non-system message at all.
    """
    counts = token_counts if token_counts is not None else [estimate_message_tokens(m) for m in msgs]
    start = len(msgs)
    total = 0
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].get("role") in SYSTEM_ROLES:
            continue
        if start < len(msgs) and total + counts[i] > keep_recent_tokens:
            break
        total += counts[i]
        start = i
    return _align_to_protocol(msgs, start)
