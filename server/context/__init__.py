"""The context pipeline: pure functions from transcript messages to the request view (SPEC sections 1-8, 11).

One module per stage: ``tokens`` (estimate), ``repair`` (tool protocol), ``tail`` (safe tail), ``micro``
(microcompaction), ``summary`` (structured summary), ``fallback`` (fallback window) and ``view`` (the whole
pipeline). No I/O, no clock, no randomness; nothing here imports the rest of ``server``.
"""

from .clip import clip_to_budget, fit_to_window
from .failures import is_failure
from .fallback import FALLBACK_SUMMARY, fallback_window
from .fed import next_snapshots
from .incremental import build_request_view
from .micro import is_failed_result, microcompact, placeholder
from .repair import INTERRUPTED_RESULT, SENT_KEYS, clean_message, repair_tool_pairing
from .summary import render_summary, summarize
from .summary_state import WRITE_TOOLS, SummaryState, summary_feed, write_paths
from .tail import safe_tail_start
from .tokens import (
    IMAGE_TOKENS,
    Calibration,
    apply_calibration,
    calibrate,
    calibrate_refused,
    estimate_message_tokens,
    estimate_messages_tokens,
    estimate_text_tokens,
)
from .view import Compaction, RequestView, ViewSettings, fallback_request_view

__all__ = [
    "FALLBACK_SUMMARY",
    "IMAGE_TOKENS",
    "INTERRUPTED_RESULT",
    "SENT_KEYS",
    "WRITE_TOOLS",
    "Calibration",
    "Compaction",
    "RequestView",
    "SummaryState",
    "ViewSettings",
    "apply_calibration",
    "build_request_view",
    "calibrate",
    "calibrate_refused",
    "clean_message",
    "clip_to_budget",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_text_tokens",
    "fallback_request_view",
    "fallback_window",
    "fit_to_window",
    "is_failed_result",
    "is_failure",
    "microcompact",
    "next_snapshots",
    "placeholder",
    "render_summary",
    "repair_tool_pairing",
    "safe_tail_start",
    "summarize",
    "summary_feed",
    "write_paths",
]
