"""OpenAI chat-protocol checker for request views; other test suites import ``is_protocol_valid``.

Rules (R-REP-2): every ``tool`` message answers a call of the assistant message right before its run of tool
messages, once; every call is answered in that run; the conversation part (after the leading system
messages) never starts with a tool message; ``tool_calls`` is never an empty list; only sent keys appear.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SENT_KEYS = {"role", "content", "tool_calls", "tool_call_id", "name", "reasoning_items"}
ROLES = {"system", "developer", "user", "assistant", "tool"}


def _message_problems(i: int, msg: Mapping[str, Any]) -> list[str]:
    problems = []
    if msg.get("role") not in ROLES:
        problems.append(f"message {i}: unknown role {msg.get('role')!r}")
    extra = set(msg) - SENT_KEYS
    if extra:
        problems.append(f"message {i}: keys that are never sent: {sorted(extra)}")
    if "tool_calls" in msg and (msg.get("role") != "assistant" or not msg["tool_calls"]):
        problems.append(f"message {i}: tool_calls must be a non-empty list on an assistant message")
    if msg.get("role") == "tool" and not isinstance(msg.get("tool_call_id"), str):
        problems.append(f"message {i}: tool message without tool_call_id")
    return problems


def _run_problems(msgs: Sequence[Mapping[str, Any]], i: int) -> tuple[list[str], int]:
    """Check the assistant at ``i`` and its run of tool results; return problems and the run's end."""
    ids = [c.get("id") for c in msgs[i].get("tool_calls") or ()]
    end = i + 1
    answered: list[Any] = []
    problems = []
    while end < len(msgs) and msgs[end].get("role") == "tool":
        call_id = msgs[end].get("tool_call_id")
        if call_id not in ids:
            problems.append(f"message {end}: tool result {call_id!r} answers no call of message {i}")
        elif call_id in answered:
            problems.append(f"message {end}: second result for call {call_id!r}")
        answered.append(call_id)
        end += 1
    for call_id in ids:
        if call_id not in answered:
            problems.append(f"message {i}: call {call_id!r} has no result in the run after it")
    return problems, end


def is_protocol_valid(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Problems found in ``messages`` as a provider request; an empty list means valid."""
    problems: list[str] = []
    for i, msg in enumerate(messages):
        problems += _message_problems(i, msg)
    first = next((i for i, m in enumerate(messages) if m.get("role") not in ("system", "developer")), None)
    if first is not None and messages[first].get("role") == "tool":
        problems.append(f"message {first}: the conversation starts with a tool result")
    i = 0
    while i < len(messages):
        msg = messages[i]
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            run_problems, i = _run_problems(messages, i)
            problems += run_problems
            continue
        if msg.get("role") == "tool":
            problems.append(f"message {i}: tool result not in the run right after a calling assistant message")
        i += 1
    return problems
