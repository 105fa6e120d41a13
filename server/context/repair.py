"""Tool-protocol repair before compaction (R-REP-1, R-REP-2, R-SRC-3).

OpenAI's rule: every ``tool`` message answers a call of the assistant message right before its run of tool
messages, and every call is answered. A crash mid-call leaves a call without a result; edits and restarts can
leave results without a call or out of place. The stored transcript is never touched (R-SRC-2): this builds
a fresh, protocol-valid list of fresh dicts that carry only the keys a provider is sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "INTERRUPTED_RESULT",
    "SENT_KEYS",
    "SYSTEM_ROLES",
    "clean_message",
    "repair_tool_pairing",
    "repair_with_origins",
]

SENT_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
# "developer" is OpenAI's newer name for a system message; both are kept the same way.
SYSTEM_ROLES = frozenset({"system", "developer"})
INTERRUPTED_RESULT = (
    "Tool call interrupted: no result was recorded (the process stopped before the tool finished)."
)


def _copy_content(content: Any) -> Any:
    # Fresh part dicts, so a caller editing the view cannot reach the transcript's objects.
    if isinstance(content, list):
        return [dict(part) if isinstance(part, Mapping) else part for part in content]
    return content


def _copy_tool_calls(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for call in calls:
        copied = dict(call)
        if isinstance(copied.get("function"), Mapping):
            copied["function"] = dict(copied["function"])
        out.append(copied)
    return out


def clean_message(msg: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict with only the sent keys (R-SRC-3: reasoning, seq, status and the like are dropped).

    An empty ``tool_calls`` list is dropped too: providers reject an empty array.
    """
    out: dict[str, Any] = {}
    for key in SENT_KEYS:
        if key not in msg:
            continue
        value = msg[key]
        if key == "tool_calls":
            if not value:
                continue
            value = _copy_tool_calls(value)
        elif key == "content":
            value = _copy_content(value)
        out[key] = value
    return out


def _call_ids(msg: Mapping[str, Any]) -> list[str]:
    """Ids of an assistant message's tool calls, in call order, without repeats."""
    if msg.get("role") != "assistant":
        return []
    ids: list[str] = []
    for call in msg.get("tool_calls") or ():
        call_id = call.get("id") if isinstance(call, Mapping) else None
        if isinstance(call_id, str) and call_id not in ids:
            ids.append(call_id)
    return ids


def _tool_run_end(msgs: Sequence[Mapping[str, Any]], start: int) -> int:
    end = start
    while end < len(msgs) and msgs[end].get("role") == "tool":
        end += 1
    return end


def repair_with_origins(msgs: Sequence[Mapping[str, Any]]) -> list[tuple[dict[str, Any], int | None]]:
    """Repaired messages paired with the index of the input message each came from (None = synthetic).

    The origin lets callers reuse per-message token counts the store already computed (R-REP-1, R-REP-2).
    """
    out: list[tuple[dict[str, Any], int | None]] = []
    i = 0
    while i < len(msgs):
        msg = msgs[i]
        if msg.get("role") == "tool":
            i += 1  # A result outside the run right after its call's assistant message: removed.
            continue
        out.append((clean_message(msg), i))
        ids = _call_ids(msg)
        if not ids:
            i += 1
            continue
        run_end = _tool_run_end(msgs, i + 1)
        first_result: dict[str, int] = {}
        for j in range(i + 1, run_end):
            call_id = msgs[j].get("tool_call_id")
            if call_id in ids and call_id not in first_result:
                first_result[call_id] = j  # Duplicates keep the first result.
        for call_id in ids:  # Results follow in call order.
            j = first_result.get(call_id)
            if j is None:
                out.append(({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT}, None))
            else:
                out.append((clean_message(msgs[j]), j))
        i = run_end
    return out


def repair_tool_pairing(msgs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Protocol-valid copy of ``msgs`` (R-REP-1, R-REP-2); the input is never mutated (R-SRC-2).

    A call without a result gets a synthetic ``INTERRUPTED_RESULT`` right after its assistant message's run;
    a result whose call is absent or not in the run right after the assistant holding it is removed;
    duplicate results keep the first; results are put in call order. Non-sent keys are stripped.
    """
    return [msg for msg, _ in repair_with_origins(msgs)]
