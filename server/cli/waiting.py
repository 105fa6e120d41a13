"""``threadline exec`` says what it is waiting for while nothing arrives: a provider that accepts the request and
never answers holds a turn for up to ``THREADLINE_READ_TIMEOUT`` seconds per attempt (and the attempts that
follow), and a script's log must not look like a hang meanwhile. Every ``EVERY`` seconds without an update, one
line on stderr: what is awaited (the model, or the tool running) and for how long.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

EVERY = 30.0  # seconds between two lines while nothing arrives


class WaitReport:
    """Fed every update of the turn (``seen``); ``run`` is the reporting task, cancelled when the turn ends."""

    def __init__(self, say: Callable[[str], None], every: float = EVERY) -> None:
        self.say, self.every = say, every
        self.last = time.monotonic()  # the last update
        self.awaiting = "the model"
        self.reported = 0.0  # the last line said

    def seen(self, u: dict[str, Any]) -> None:
        self.last = time.monotonic()
        kind = u.get("kind")
        if kind in ("toolCall", "toolStarted"):
            self.awaiting = str(u.get("tool") or "the tool")
        elif kind in ("toolResult", "turnStarted", "usage", "contextCompacted", "userMessage"):
            self.awaiting = "the model"

    async def run(self) -> None:
        while True:
            due = max(self.last, self.reported) + self.every
            await asyncio.sleep(max(0.5, due - time.monotonic()))
            now = time.monotonic()
            if now - max(self.last, self.reported) < self.every:
                continue
            self.reported = now
            waited = int(now - self.last)
            if self.awaiting == "the model":
                self.say(
                    f"… still waiting for the model: no answer for {waited} s (each attempt waits up to "
                    "THREADLINE_READ_TIMEOUT seconds; Ctrl-C cancels the turn)"
                )
            else:
                self.say(f"… still running {self.awaiting}: {waited} s")
