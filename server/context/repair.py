"""Tool-protocol repair before compaction (R-REP-1, R-REP-2, R-SRC-3).

OpenAI's rule: every ``tool`` message answers a call of the assistant message right before its run of tool
messages, and every call is answered. A crash mid-call leaves a call without a result; edits and restarts can
leave results without a call or out of place. The stored transcript is never touched (R-SRC-2): this builds
a fresh, protocol-valid list of fresh dicts that carry only the keys a provider is sent.
"""

from __future__ import annotations

import json
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

# ``reasoning_items`` go only to the provider kind that made them (server/providers/reasoning_items.py).
SENT_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning_items")
# "developer" is OpenAI's newer name for a system message; both are kept the same way.
SYSTEM_ROLES = frozenset({"system", "developer"})
INTERRUPTED_RESULT = "Tool call interrupted: no result was recorded (the process stopped before the tool finished)."


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
            copied["function"]["arguments"] = sendable_arguments(copied["function"].get("arguments"))
        out.append(copied)
    return out


def sendable_arguments(arguments: Any) -> str:
    """Arguments a provider accepts: the stored text when it is valid JSON, else that text as a JSON string.

    A model can stream truncated or broken JSON arguments; stored as they came (R-SRC-1), sent as they are they
    would be rejected with HTTP 400 on every later request, bricking the session. The loop already answered such a
    call with an ``Invalid arguments`` error result, so the model sees what went wrong.
    """
    if isinstance(arguments, str):
        try:
            json.loads(arguments)
            return arguments
        except ValueError:
            return json.dumps(arguments, ensure_ascii=False)
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False, default=str)


def _unique_call_ids(msg: dict[str, Any], position: int) -> list[tuple[str, str, int]]:
    """Give every call of an assistant message a distinct string id, in place (the message is a fresh copy).

    Returns ``(sent id, stored id, occurrence)`` per call: the k-th call sharing a stored id becomes
    ``<id>__<k+1>`` and is answered by the k-th result carrying that id (providers reject duplicate ids).
    """
    seen: dict[str, int] = {}
    out = []
    for k, call in enumerate(msg.get("tool_calls") or ()):
        stored = call.get("id")
        if not isinstance(stored, str) or not stored:
            stored = f"call_missing_{position}_{k}"
        n = seen.get(stored, 0)
        seen[stored] = n + 1
        sent = stored if n == 0 else f"{stored}__{n + 1}"
        call["id"] = sent
        out.append((sent, stored, n))
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
        elif key == "reasoning_items":
            if not value:
                continue
            value = [dict(item) for item in value if isinstance(item, Mapping)]
        out[key] = value
    return out


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
        cleaned = clean_message(msg)
        out.append((cleaned, i))
        calls = _unique_call_ids(cleaned, i) if msg.get("role") == "assistant" else []
        if not calls:
            i += 1
            continue
        run_end = _tool_run_end(msgs, i + 1)
        results: dict[str, list[int]] = {}
        for j in range(i + 1, run_end):
            call_id = msgs[j].get("tool_call_id")
            if isinstance(call_id, str):
                results.setdefault(call_id, []).append(j)
        for sent, stored, n in calls:  # Results follow in call order; extra duplicates are dropped.
            answers = results.get(stored, [])
            if n >= len(answers):
                out.append(({"role": "tool", "tool_call_id": sent, "content": INTERRUPTED_RESULT}, None))
            else:
                result = clean_message(msgs[answers[n]])
                result["tool_call_id"] = sent
                out.append((result, answers[n]))
        i = run_end
    return out


def repair_tool_pairing(msgs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Protocol-valid copy of ``msgs`` (R-REP-1, R-REP-2); the input is never mutated (R-SRC-2).

    A call without a result gets a synthetic ``INTERRUPTED_RESULT`` right after its assistant message's run;
    a result whose call is absent or not in the run right after the assistant holding it is removed;
    duplicate results keep the first; results are put in call order. Non-sent keys are stripped. Every call is
    made sendable: duplicate or missing ids become unique, invalid JSON arguments a JSON string.
    """
    return [msg for msg, _ in repair_with_origins(msgs)]
