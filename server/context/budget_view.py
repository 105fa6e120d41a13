"""A built request view under the context budget (B-BUDGET-1): the one place the budget meets a view.

The pipeline (``server.context.incremental``) plans against the window; this applies the budget over what it built:
the outputs cleared before stay cleared, and a new batch is cleared when it pays. The view's estimate drops by what
the cleared outputs no longer cost, so the window's checks after it (``clip.fit_to_window``) see the real request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from .budget import apply_budget
from .view import RequestView, ViewSettings

__all__ = ["budgeted"]


def budgeted(view: RequestView, settings: ViewSettings, cleared: Mapping[str, str], decide: bool = True) -> RequestView:
    """``view`` with the budget applied: ``cleared`` (key -> why, every output cleared before) replaced, and a new
    batch cleared when ``decide`` and it pays (``view.newly_cleared``). A fallback view is left as it is (it is
    never sticky, B-CACHE-4), as is every view when there is no budget."""
    if settings.budget is None or view.mode == "fallback":
        return view
    got = apply_budget(view.messages, settings.budget, cleared, view.estimated_tokens, decide)
    return replace(
        view,
        messages=got.messages,
        estimated_tokens=view.estimated_tokens - got.saved_tokens,
        cleared=got.cleared,
        newly_cleared=got.new,
        budget=got.report,
    )
