"""``threadline view SESSION [--context-window N] [--json]``: what the next model call would send, readably.

Prints ``getContextView``: the mode, the estimate against the threshold, then one line per message with its role
and estimated size, marking tool-output placeholders and the summary (R-OBS-2: shown, never written back).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

import msgspec

from protocol.turns import ContextViewResult
from protocol.wire_text import PLACEHOLDER_PREFIX, SUMMARY_MARKER
from server.cli.client import Client
from server.cli.printer import tokens
from server.context.tokens import estimate_message_tokens


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], client_run: Any) -> None:
    view = sub.add_parser("view", help="show the request view the next model call would send")
    view.add_argument("session")
    view.add_argument("--context-window", type=int, help="ask as if the window were this many tokens")
    view.add_argument("--json", action="store_true", help="print getContextView's result as JSON")
    view.set_defaults(run=lambda a: client_run(show_view, a))


async def show_view(client: Client, args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"sessionId": args.session}
    if args.context_window is not None:
        params["contextWindowTokens"] = args.context_window
    raw = await client.request("getContextView", params)
    if args.json:
        print(json.dumps(raw, ensure_ascii=False, indent=2))  # as the server sent it, field for field
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
