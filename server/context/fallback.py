"""Deterministic fallback window (R-FALL-1), also the retry view after a prompt-too-long error (R-PTL-1).

Used when the summarizer raises, when compaction cannot get under the threshold (the system messages alone
leave no room) or frees too little (B-LOOP-1), and for the single retry on a context-too-long answer. It carries less information than a
summary but is always protocol-valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocol.wire_text import SUMMARY_MARKER

from .repair import SYSTEM_ROLES, repair_tool_pairing
from .tail import holder_index

__all__ = ["FALLBACK_KEEP_MESSAGES", "FALLBACK_KEEP_SYSTEM", "FALLBACK_SUMMARY", "fallback_window"]

FALLBACK_KEEP_SYSTEM = 2
FALLBACK_KEEP_MESSAGES = 6
FALLBACK_SUMMARY = (
    f"{SUMMARY_MARKER}\n"
    "Older conversation history was dropped from this request because context compaction failed. "
    "Only the most recent messages are shown. The full transcript is kept: use search_transcript "
    "to recover earlier goals, file paths, failures and decisions."
)


def _fallback_start(conversation: Sequence[Mapping[str, Any]]) -> int:
    """Start of the last FALLBACK_KEEP_MESSAGES, moved back off a tool result to its call's assistant."""
    start = max(0, len(conversation) - FALLBACK_KEEP_MESSAGES)
    if start < len(conversation) and conversation[start].get("role") == "tool":
        holder = holder_index(conversation, start)
        if holder is not None:
            return holder
        while start < len(conversation) and conversation[start].get("role") == "tool":
            start += 1  # Unreachable after repair; kept so the view can never begin with a result.
    return start


def fallback_window(msgs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """First 2 system messages + FALLBACK_SUMMARY + the last 6 conversation messages (R-FALL-1).

    The input is repaired first (idempotent), so the window is protocol-valid whatever it is given.
    """
    repaired = repair_tool_pairing(msgs)
    systems = [m for m in repaired if m.get("role") in SYSTEM_ROLES][:FALLBACK_KEEP_SYSTEM]
    conversation = [m for m in repaired if m.get("role") not in SYSTEM_ROLES]
    tail = conversation[_fallback_start(conversation) :]
    return [*systems, {"role": "system", "content": FALLBACK_SUMMARY}, *tail]
