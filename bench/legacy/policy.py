"""The request of every model call under the b10667b policy (anchors within a turn, reset per user turn)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .clip import fit_to_window
from .tokens import estimate_message_tokens
from .view import ViewSettings, build_request_view


def legacy_requests(transcript: Sequence[dict[str, Any]], steps: Sequence[tuple[int, int]],
                    usable_window: int) -> Iterator[list[dict[str, Any]]]:
    """The messages sent at each step; ``steps`` are (user turn, transcript messages the call saw).

    ``usable_window`` is the window less the tool definitions, as the loop's view builder had it
    (no calibration: a replay reports no usage).
    """
    settings = ViewSettings(usable_window)
    counts = [estimate_message_tokens(m) for m in transcript]  # the store's per-message estimates
    anchors: tuple = ()
    turn = None
    for step_turn, upto in steps:
        if step_turn != turn:
            anchors, turn = (), step_turn  # R-SUM-4 as built then: a new user turn starts without anchors
        view = build_request_view(transcript[:upto], settings, token_counts=counts[:upto], anchors=anchors)
        anchors = tuple(view.anchors)
        yield fit_to_window(view).messages
