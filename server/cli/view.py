"""``threadline view SESSION [--context-window N] [--json] [--breakdown]``: what the next model call would send.

Prints ``getContextView``: the mode, the estimate against the threshold, then one line per message with its role
and estimated size, marking tool-output placeholders and the summary (R-OBS-2: shown, never written back).
``--breakdown`` prints instead what fills the window, part by part with a bar, and the session's compactions.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

import msgspec

from protocol.turns import ContextViewResult
from protocol.wire_text import PLACEHOLDER_PREFIX, SUMMARY_MARKER
from server.cli.client import Connection
from server.cli.printer import tokens
from server.context.tokens import estimate_message_tokens


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], client_run: Any) -> None:
    view = sub.add_parser("view", help="show the request view the next model call would send")
    view.add_argument("session")
    view.add_argument("--context-window", type=int, help="ask as if the window were this many tokens")
    view.add_argument("--json", action="store_true", help="print getContextView's result as JSON")
    view.add_argument(
        "--breakdown", action="store_true", help="what fills the context window, and the compactions so far"
    )
    view.set_defaults(run=lambda a: client_run(show_view, a))


async def show_view(client: Connection, args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"sessionId": args.session}
    if args.context_window is not None:
        params["contextWindowTokens"] = args.context_window
    raw = await client.request("getContextView", params)
    if args.json:
        print(json.dumps(raw, ensure_ascii=False, indent=2))  # as the server sent it, field for field
    elif args.breakdown:
        print_breakdown(msgspec.convert(raw, ContextViewResult), sys.stdout)
    else:
        print_view(msgspec.convert(raw, ContextViewResult), sys.stdout)
    return 0


def print_view(view: ContextViewResult, out: TextIO) -> None:
    est, threshold = view.estimated_tokens, view.threshold_tokens
    out.write(
        f"mode {view.mode}: {tokens(est)} tokens estimated, threshold {tokens(threshold)} "
        f"({'over' if est > threshold else 'under'}), window {tokens(view.context_window_tokens)}, "
        f"keep recent {tokens(view.keep_recent_tokens)}\n"
    )
    out.write(
        f"{len(view.messages)} messages sent, built from {view.transcript_messages} stored; "
        f"{view.compacted_tool_outputs} tool outputs compacted\n"
    )
    if view.budget is not None:
        out.write(budget_line(view) + "\n")
    for n, msg in enumerate(view.messages, 1):
        out.write(f"{n:>4} {_label(msg):<22} {tokens(estimate_message_tokens(msg)):>6}  {_gist(msg)}\n")
    if view.summary:
        out.write("\n== summary ==\n" + view.summary.rstrip("\n") + "\n")


def _label(msg: dict[str, Any]) -> str:
    content = msg["content"] if isinstance(msg.get("content"), str) else ""
    if msg["role"] == "system" and content.startswith(SUMMARY_MARKER):
        return "system ** SUMMARY **"
    if msg["role"] == "tool" and content.startswith(PLACEHOLDER_PREFIX):
        return "tool [placeholder]"
    if msg.get("tool_calls"):
        return f"assistant +{len(msg['tool_calls'])} call{'s' if len(msg['tool_calls']) > 1 else ''}"
    return str(msg["role"])


def _gist(msg: dict[str, Any], width: int = 90) -> str:
    content = msg.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "[image]") for p in content if isinstance(p, dict))
    text = " ".join((content or "").split())
    if not text and msg.get("tool_calls"):
        text = ", ".join(f"{c['function']['name']}({c['function']['arguments']})" for c in msg["tool_calls"])
    return text if len(text) <= width else text[: width - 1] + "…"


# The parts of the window in the order they sit in a request, with the letter the bar draws each with.
PARTS = (
    ("systemPrompt", "system prompt", "S"),
    ("projectContext", "project context", "P"),
    ("toolDefinitions", "tool definitions", "T"),
    ("summary", "summary", "U"),
    ("messages", "messages", "M"),
    ("placeholders", "placeholders", "p"),
    ("free", "free", "."),
)
BAR_WIDTH = 60


def breakdown_bar(parts: dict[str, int], width: int = BAR_WIDTH) -> str:
    """One character per ``1/width`` of the window, each part drawn with its letter (a part above zero shows)."""
    total = max(sum(parts.get(key, 0) for key, _, _ in PARTS), 1)
    cells = {key: (parts.get(key, 0) * width) // total for key, _, _ in PARTS}
    for key, _, _ in PARTS:  # a part that exists but rounds to nothing still gets one cell
        if parts.get(key, 0) > 0 and cells[key] == 0:
            cells[key] = 1
    while sum(cells.values()) > width:  # take the excess from the largest part
        cells[max(cells, key=lambda k: cells[k])] -= 1
    cells["free"] += width - sum(cells.values())
    return "[" + "".join(letter * cells[key] for key, _, letter in PARTS) + "]"


def budget_line(view: ContextViewResult) -> str:
    """B-BUDGET-1: the budget the view was planned against and how many old tool outputs it has cleared."""
    budget = view.budget
    assert budget is not None
    cleared = view.breakdown.cleared if view.breakdown else []
    what = "budget auto" if budget.source == "auto" else f"budget {tokens(budget.tokens)} tokens (config)"
    gone = f"{len(cleared)} old tool output{'' if len(cleared) == 1 else 's'} cleared"
    return f"{what}, {gone}: {budget.reason}"


def print_breakdown(view: ContextViewResult, out: TextIO) -> None:
    parts: dict[str, int] = msgspec.to_builtins(view.breakdown) if view.breakdown else {}
    window = max(view.context_window_tokens, 1)
    used = view.estimated_tokens + view.reserved_tokens
    out.write(f"context {tokens(used)} of {tokens(view.context_window_tokens)} tokens ({100 * used // window}%), ")
    out.write(f"view {view.mode}, compaction at {tokens(view.threshold_tokens)} message tokens\n")
    if view.budget is not None:
        out.write(budget_line(view) + "\n")
    out.write(breakdown_bar(parts) + "\n")
    for key, name, letter in PARTS:
        value = parts.get(key, 0)
        out.write(f"  {letter} {name:<17}{tokens(value):>8}  {100 * value // window:>3}%\n")
    out.write(f"{len(view.compactions)} compaction{'' if len(view.compactions) == 1 else 's'}\n")
    for c in view.compactions:
        focus = f"  focus: {c.focus}" if c.focus else ""
        out.write(
            f"  #{c.event_id} {c.at} {c.trigger:<13} {c.mode:<14} "
            f"{tokens(c.before_tokens)} -> {tokens(c.after_tokens)}{focus}\n"
        )
