"""Shortening oversized messages in a request view so it fits the window (beyond the article).

The fallback window (R-FALL-1) keeps the last six conversation messages verbatim, so a single huge message among
them (a pasted log, a 50 KB tool output on a small window) makes every request too long, and the retry of
R-PTL-1 fails the same way. When a view is still over its budget, the largest conversation messages are cut to a
head and a tail around a marker, in the view only: the transcript keeps every character (R-SRC-2) and the marker
says how to get it back. Pure and deterministic, like every stage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dataclasses import replace

from .repair import SYSTEM_ROLES
from .tokens import estimate_message_tokens, estimate_messages_tokens
from .view import RequestView

__all__ = ["MIN_KEEP_TOKENS", "clip_marker", "clip_to_budget", "fit_to_window"]

MIN_KEEP_TOKENS = 200  # a clipped message keeps at least this much of its text


def clip_marker(omitted_chars: int) -> str:
    return (f"\n[... {omitted_chars} characters of this message omitted to fit the context window; "
            "the full text is in the transcript: use search_transcript or read_artifact ...]\n")


def clip_to_budget(messages: Sequence[Mapping[str, Any]], budget: int) -> tuple[list[dict[str, Any]], int]:
    """``messages`` with the largest string contents shortened until the estimate fits ``budget``.

    System messages (the frozen context, summaries) and tool-call arguments are never cut, so protocol pairing
    is untouched. Returns the new list and how many messages were shortened; the input is not modified.
    """
    out = [dict(m) for m in messages]
    tokens = [estimate_message_tokens(m) for m in out]
    originals: dict[int, str] = {}
    cuttable = [i for i, m in enumerate(out) if m.get("role") not in SYSTEM_ROLES and isinstance(m.get("content"), str)]
    for _ in range(_MAX_PASSES):  # the estimate is not linear in characters: a pass or two more may be needed
        over = sum(tokens) - budget
        biggest = max((i for i in cuttable if tokens[i] > MIN_KEEP_TOKENS), key=lambda i: (tokens[i], -i),
                      default=None)
        if over <= 0 or biggest is None:
            break
        text = originals.setdefault(biggest, out[biggest]["content"])
        whole = estimate_message_tokens({**out[biggest], "content": text})
        target = max(tokens[biggest] - over - _MARKER_TOKENS, MIN_KEEP_TOKENS)
        keep = int(len(text) * target / whole)
        head, tail = keep * 2 // 3, keep // 3
        out[biggest]["content"] = text[:head] + clip_marker(len(text) - head - tail) + (text[-tail:] if tail else "")
        tokens[biggest] = estimate_message_tokens(out[biggest])
    return out, len(originals)


_MAX_PASSES = 16
_MARKER_TOKENS = 40  # what the marker itself costs, roughly


def fit_to_window(view: RequestView) -> RequestView:
    """A fallback view larger than the whole window cannot be sent; cut its oversized messages down to the
    threshold. Every other view is returned as it is (the pipeline already keeps them under the threshold)."""
    if view.mode != "fallback" or view.estimated_tokens <= view.context_window_tokens:
        return view
    messages, clipped = clip_to_budget(view.messages, view.threshold_tokens)
    return replace(view, messages=messages, estimated_tokens=estimate_messages_tokens(messages),
                   clipped_messages=clipped)
