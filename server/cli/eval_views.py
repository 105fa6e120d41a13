"""The points and the three strategies' views of ``threadline eval``.

A point is a model call (a step, from 1, as ``threadline replay`` numbers them). At a point each strategy has a
view, the message list a model would read there:

- ``threadline``: the request the real pipeline sent at that step, as ``replay --requests-out`` recorded it;
- ``naive``: the system prompt and the whole transcript up to the step, clipped to the window (less ``reserve``)
  from the front;
- ``codex-style``: the transcript appended message by message; when the view passes CODEX_TRIGGER of the window the
  model writes a summary from COMPACTION_PROMPT (a real call, counted), and the view becomes the system prompt, the
  summary and the latest CODEX_TAIL of the window in messages.

The system prompt of the naive and codex-style views is the leading system messages of the first request, so the
three differ only in how they treat the history.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from server.context.tokens import estimate_message_tokens

__all__ = [
    "CODEX_TAIL",
    "CODEX_TRIGGER",
    "COMPACTION_PROMPT",
    "PROBE_RESERVE",
    "SUMMARY_PREFIX",
    "CodexStyle",
    "clip_front",
    "load_requests",
    "naive_view",
    "points_of",
    "reserve",
    "system_prefix",
]

CODEX_TRIGGER = 0.9  # the share of the window at which the codex-style view is summarized
CODEX_TAIL = 0.25  # the share of the window kept as the latest messages after a codex-style summary
PROBE_RESERVE = 1024  # tokens left free in a clipped view for the probe question and its answer (at most 1/8 window)
COMPACTION_PROMPT = (
    "You are performing a context checkpoint compaction. Write a handoff summary for another model that will "
    "resume this task: the user's goal and constraints, the progress so far and the decisions made, the files "
    "changed, what failed and why, and the clear next steps. Be concise and specific; keep exact file paths, "
    "identifiers and error messages."
)
SUMMARY_PREFIX = "Another language model started to solve this problem and produced a summary of its thinking:\n"

Messages = list[dict[str, Any]]


def points_of(compacted: list[bool], first: int | None, at: list[int] | None) -> list[int]:
    """The steps to probe: ``at`` when given (checked against the number of steps), else the first ``first``
    steps right after a compaction (``compacted[i]``: step i+1 was the first call after one)."""
    if at:
        wrong = [s for s in at if not 1 <= s <= len(compacted)]
        if wrong:
            raise ValueError(f"--at {wrong[0]}: the replay made {len(compacted)} model calls (steps 1..)")
        return sorted(set(at))
    steps = [i for i, c in enumerate(compacted, 1) if c]
    return steps[: first if first is not None else 3]


def load_requests(path: Path) -> list[Messages]:
    """The requests ``replay --requests-out`` wrote, by step (index 0 = step 1)."""
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line)["messages"] for line in lines if line.strip()]


def system_prefix(first_request: Messages) -> Messages:
    prefix = []
    for msg in first_request:
        if msg.get("role") != "system":
            break
        prefix.append(msg)
    return prefix


def _tokens(messages: Messages) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


def clip_front(messages: Messages, budget: int) -> Messages:
    """The latest messages of ``messages`` within ``budget`` tokens; never starting with a tool result (its call
    was cut off)."""
    kept: Messages = []
    total = 0
    for msg in reversed(messages):
        total += estimate_message_tokens(msg)
        if total > budget:
            break
        kept.append(msg)
    kept.reverse()
    while kept and kept[0].get("role") == "tool":
        kept.pop(0)
    return kept


def reserve(window: int) -> int:
    return min(PROBE_RESERVE, window // 8)


def naive_view(system: Messages, transcript: Messages, window: int) -> Messages:
    return system + clip_front(transcript, max(0, window - reserve(window) - _tokens(system)))


Ask = Callable[[Messages], Awaitable[str]]


class CodexStyle:
    """The codex-style history, advanced message by message; ``summaries`` keeps each summary call's request and
    answer."""

    def __init__(self, system: Messages, window: int, ask: Ask):
        self.system = system
        self.window = window
        self.ask = ask
        self.history: Messages = []
        self.summaries: list[tuple[Messages, str]] = []
        self._seen = 0

    def view(self) -> Messages:
        return self.system + self.history

    async def advance(self, transcript: Messages) -> Messages:
        """Append the messages of ``transcript`` not seen yet (it grows from call to call), compacting on the way;
        the view after the last."""
        for i in range(self._seen, len(transcript)):
            self.history.append(transcript[i])
            if i + 1 < len(transcript) and transcript[i + 1].get("role") == "tool":
                continue  # never between a call and its results: the summary request must be valid
            if _tokens(self.view()) > CODEX_TRIGGER * self.window:
                await self._compact()
        self._seen = max(self._seen, len(transcript))
        return self.view()

    async def _compact(self) -> None:
        prompt = {"role": "user", "content": COMPACTION_PROMPT}
        room = self.window - reserve(self.window) - _tokens(self.system) - estimate_message_tokens(prompt)
        request = self.system + clip_front(self.history, max(0, room)) + [prompt]
        summary = await self.ask(request)
        self.summaries.append((request, summary))
        tail = clip_front(self.history, int(CODEX_TAIL * self.window))
        self.history = [{"role": "user", "content": SUMMARY_PREFIX + summary}, *tail]
