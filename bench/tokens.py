"""Tokens: replay every trajectory; compare with naive resend and observation masking, and what stays in view."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import MASK_KEEP, MASK_TEXT
from server.agent.definitions import load_agents
from server.agent.views import tool_reserve_tokens as tool_overhead_tokens
from server.cli.replay_run import replay_file
from server.context import ViewSettings, estimate_message_tokens, fit_to_window, write_paths
from server.context.failures import is_failure, telling_line
from server.context.incremental import IncrementalView
from server.context.micro import content_text
from server.context.summary_state import one_line as _one_line
from server.services.subagents import task_spec_for

FAILURE_SNIPPET = 36  # of a failure's telling line: what even an older (80-character) summary line keeps of it


def _snippet(text: str, n: int = 50) -> str:
    return _one_line(text)[:n]


def _trackables(transcript: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Per message: ('goal', snippet) | ('failure', snippet) | ('paths', [...]) | (None, None). A failure is a
    call that failed (B-SUM-10, the summary's own rule); it is kept when the start of its telling line is in view."""
    out: list[tuple[str, Any]] = []
    names: dict[str, str] = {}
    for msg in transcript:
        role = msg["role"]
        if role == "user" and _snippet(content_text(msg.get("content"))):
            out.append(("goal", _snippet(content_text(msg.get("content")))))
        elif role == "tool":
            text = content_text(msg.get("content"))
            failed = is_failure(text, names.get(str(msg.get("tool_call_id"))), msg.get("tool_status"))
            out.append(("failure", _snippet(telling_line(text), FAILURE_SNIPPET)) if failed else (None, None))
        elif role == "assistant" and msg.get("tool_calls"):
            names = {str(c["id"]): c["function"]["name"] for c in msg["tool_calls"]}
            paths = [
                p for c in msg["tool_calls"] for p in write_paths(c["function"]["name"], c["function"]["arguments"])
            ]
            out.append(("paths", paths) if paths else (None, None))
        else:
            out.append((None, None))
    return out


def _view_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        parts.append(_one_line(content_text(m.get("content"))))
        for c in m.get("tool_calls") or ():
            parts.append(c["function"]["arguments"])
    return "\n".join(parts)


def replay_tool_overhead_tokens() -> int:
    """The tool definitions' reserve of a replayed session's requests, as its server plans them: the built-in tools
    and ``task`` (a replay's folder and home hold no agent files)."""
    with tempfile.TemporaryDirectory() as empty:
        return tool_overhead_tokens([task_spec_for(load_agents(Path(empty), Path(empty)))])


def analyse_replay(report, window: int) -> dict[str, Any]:
    """Tokens and retention per approach; Threadline's views are rebuilt exactly as the loop built them."""
    transcript = report.transcript
    tokens = [estimate_message_tokens(m) for m in transcript]
    track = _trackables(transcript)
    settings = ViewSettings(window - replay_tool_overhead_tokens())
    mask_saving = [0] * len(transcript)
    placeholder_tokens = estimate_message_tokens({"role": "tool", "content": MASK_TEXT, "tool_call_id": "call_x"})
    tool_positions: list[int] = []
    for i, m in enumerate(transcript):
        if m["role"] == "tool":
            tool_positions.append(i)
            mask_saving[i] = max(tokens[i] - placeholder_tokens, 0)
    state, compaction, fed = IncrementalView(), None, 0
    sums = {"naive": 0, "masking": 0, "threadline": 0}
    kept = {k: {"goals": 0, "failures": 0, "paths": 0} for k in sums}
    total = {"goals": 0, "failures": 0, "paths": 0}
    over = {"naive": 0, "masking": 0, "threadline": 0}
    mismatches = 0
    prefix_tokens, tool_count, masked_saving = 0, 0, 0
    for step in report.steps:
        upto = min(step.transcript_seq, len(transcript))
        while fed < upto:
            prefix_tokens += tokens[fed]
            if transcript[fed]["role"] == "tool":
                tool_count += 1
                if tool_count > MASK_KEEP:
                    masked_saving += mask_saving[tool_positions[tool_count - MASK_KEEP - 1]]
            fed += 1
        state.feed(transcript[state.fed : upto])
        view = fit_to_window(state.view(settings, compaction))  # exactly what the loop sends
        compaction = view.compaction or compaction  # carried across calls, turns and restarts (B-CACHE-3)
        mismatches += view.estimated_tokens != step.view_tokens
        masking_tokens = prefix_tokens - masked_saving
        sums["naive"] += prefix_tokens
        sums["masking"] += masking_tokens
        sums["threadline"] += view.estimated_tokens
        for name, value in (
            ("naive", prefix_tokens),
            ("masking", masking_tokens),
            ("threadline", view.estimated_tokens),
        ):
            over[name] += value > window
        text = _view_text(view.messages)
        latest_tools = set(tool_positions[max(tool_count - MASK_KEEP, 0) : tool_count])
        for i in range(upto):
            kind, value = track[i]
            if kind == "goal":
                total["goals"] += 1
                kept["naive"]["goals"] += 1
                kept["masking"]["goals"] += 1
                kept["threadline"]["goals"] += value in text
            elif kind == "failure":
                total["failures"] += 1
                kept["naive"]["failures"] += 1
                kept["masking"]["failures"] += i in latest_tools
                kept["threadline"]["failures"] += value in text
            elif kind == "paths":
                for path in value:
                    total["paths"] += 1
                    kept["naive"]["paths"] += 1
                    kept["masking"]["paths"] += 1
                    kept["threadline"]["paths"] += path in text
    return {
        "steps": len(report.steps),
        "tokens": sums,
        "kept": kept,
        "total": total,
        "over_window": over,
        "mismatches": mismatches,
        "compactions": report.compactions,
        "modes": report.modes(),
    }


async def bench_tokens(files: list[Path], windows: tuple[int, ...]) -> dict[str, dict[int, dict[str, Any]]]:
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for path in files:
        for window in windows:
            t0 = time.perf_counter()
            report = await replay_file(path, window)
            result = analyse_replay(report, window)
            result["seconds"] = time.perf_counter() - t0
            result["errors"] = report.errors
            out.setdefault(path.name, {})[window] = result
            print(
                f"  {path.name} at {window:,}: {result['steps']} steps, {result['tokens']['threadline']:,} vs "
                f"{result['tokens']['naive']:,} naive ({result['seconds']:.0f} s)",
                flush=True,
            )
    return out


# --- the results file ---------------------------------------------------------------------------------------
