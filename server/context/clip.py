"""Shortening oversized messages in a request view so it fits the window (beyond the article).

The fallback window (R-FALL-1) keeps the last six conversation messages verbatim, so a single huge message among
them (a pasted log, a 50 KB tool output on a small window) makes every request too long, and the retry of
R-PTL-1 fails the same way. When a view is still over its budget, the largest conversation messages are cut to a
head and a tail around a marker, in the view only: the transcript keeps every character (R-SRC-2) and the marker
says how to get it back. Pure and deterministic, like every stage. The summary path uses it too: a last exchange
too large for any summary view to fit the threshold is cut to what the compaction target leaves
(``Compaction.clip_tokens``), the same way at every repeat, so the view keeps its summary and stays sticky.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .repair import SYSTEM_ROLES
from .tokens import estimate_message_tokens, estimate_messages_tokens
from .view import RequestView

__all__ = ["MIN_KEEP_TOKENS", "clip_marker", "clip_to_budget", "fit_to_window"]

MIN_KEEP_TOKENS = 200  # a clipped message keeps at least this much of its text


def clip_marker(omitted_chars: int) -> str:
    return (
        f"\n[... {omitted_chars} characters of this message omitted to fit the context window; "
        "the full text is in the transcript: use search_transcript or read_artifact ...]\n"
    )


def clip_to_budget(messages: Sequence[Mapping[str, Any]], budget: int) -> tuple[list[dict[str, Any]], int]:
    """``messages`` with the largest conversation messages shortened until the estimate fits ``budget``.

    A message is shortened in its text (the text parts of one with images; images are kept) and in the long
    string values of its tool-call arguments (re-encoded as valid JSON, so providers that parse arguments still
    can). System messages (the frozen context, summaries) are never cut, and ids and roles never change, so protocol pairing is untouched. Returns the new list and how
    many messages were shortened; the input is not modified.
    """
    originals = [dict(m) for m in messages]
    out = [dict(m) for m in messages]
    tokens = [estimate_message_tokens(m) for m in out]
    cuttable = [i for i, m in enumerate(out) if m.get("role") not in SYSTEM_ROLES]
    ratios: dict[int, float] = {}  # how much of each shortened message's text is kept
    for _ in range(_MAX_PASSES):  # the estimate is not linear in characters: correct the ratio pass by pass
        over = sum(tokens) - budget
        biggest = max((i for i in cuttable if tokens[i] > MIN_KEEP_TOKENS), key=lambda i: (tokens[i], -i), default=None)
        if over <= 0 or biggest is None:
            break
        target = max(tokens[biggest] - over - _MARKER_TOKENS, MIN_KEEP_TOKENS)
        ratio = ratios.get(biggest, 1.0) * target / tokens[biggest]
        shortened = _shortened(originals[biggest], ratio)
        if shortened is None:
            cuttable.remove(biggest)
            continue
        ratios[biggest] = ratio
        out[biggest] = shortened
        tokens[biggest] = estimate_message_tokens(shortened)
    return out, len(ratios)


_MAX_PASSES = 24
_MARKER_TOKENS = 40  # what the marker itself costs, roughly
_LONG = 200  # string values shorter than this are left alone


def _shortened(msg: dict[str, Any], ratio: float) -> dict[str, Any] | None:
    """``msg`` with its text and long argument strings cut to ``ratio`` of their length; None if nothing to cut."""
    new = dict(msg)
    changed = False
    content = msg.get("content")
    if isinstance(content, str) and len(content) > _LONG:
        new["content"] = _cut(content, ratio)
        changed = True
    elif isinstance(content, list):  # text and images (a message with images): the long text parts are cut
        parts = [_cut_part(part, ratio) for part in content]
        if parts != content:
            new["content"] = parts
            changed = True
    calls = []
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "")
        except (TypeError, ValueError):
            calls.append(call)
            continue
        cut = _cut_values(args, ratio)
        if cut != args:
            changed = True
            call = {**call, "function": {**fn, "arguments": json.dumps(cut, ensure_ascii=False)}}
        calls.append(call)
    if calls:
        new["tool_calls"] = calls
    return new if changed else None


def _cut_part(part: Any, ratio: float) -> Any:
    text = part.get("text") if isinstance(part, Mapping) and part.get("type") == "text" else None
    if isinstance(text, str) and len(text) > _LONG:
        return {**part, "text": _cut(part["text"], ratio)}
    return part


def _cut_values(value: Any, ratio: float) -> Any:
    if isinstance(value, str):
        return _cut(value, ratio) if len(value) > _LONG else value
    if isinstance(value, dict):
        return {k: _cut_values(v, ratio) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_values(v, ratio) for v in value]
    return value


def _cut(text: str, ratio: float) -> str:
    keep = int(len(text) * min(ratio, 1.0))
    head, tail = keep * 2 // 3, keep // 3
    return text[:head] + clip_marker(len(text) - head - tail) + (text[-tail:] if tail else "")


def fit_to_window(view: RequestView) -> RequestView:
    """A fallback view larger than the whole window cannot be sent; cut its oversized messages down to the
    threshold. Every other view is returned as it is (the pipeline already keeps them under the threshold)."""
    if view.mode != "fallback" or view.estimated_tokens <= view.context_window_tokens:
        return view
    messages, clipped = clip_to_budget(view.messages, view.threshold_tokens)
    return replace(
        view, messages=messages, estimated_tokens=estimate_messages_tokens(messages), clipped_messages=clipped
    )
