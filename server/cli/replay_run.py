"""Driving a replay from the client side: ``threadline replay FILE`` and the data behind ``threadline demo``.

Starts a real server on a throwaway home with ``THREADLINE_REPLAY_FILE`` set (see ``server.replay``), then talks
plain JSON-RPC: the leading system messages are imported as the session, each recorded user message is a
``submitTurn``, approvals are off (nothing runs). Each ``usage`` notification is one model call (a step); its
``contextTokens`` is the request view's size, and a ``contextCompacted`` notification before it names the mode.
The transcript size at a step is the sum of the stored messages' estimates up to the last ``seq`` seen.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import msgspec

from protocol.transcript import ReadTranscriptResult, TranscriptItem
from server.cli.client import Client
from server.context.messages import pipeline_message
from server.context.tokens import estimate_message_tokens
from server.recording import REPLAY_ENV, REQUESTS_OUT_ENV, load_recording, plan_replay

__all__ = ["BREAK_RATIO", "ReplayReport", "Step", "cache_breaks", "print_report", "replay_file"]

UNLIMITED_ITERATIONS = 1_000_000  # a recorded turn may hold hundreds of model calls
BREAK_RATIO = 0.5  # a call whose unchanged prefix is under half the previous request broke the prompt cache


@dataclass
class Step:
    turn: int
    transcript_seq: int  # the transcript the call was built from: seq 1..transcript_seq
    view_tokens: int
    mode: str
    compacted: bool  # a compaction was announced right before this call
    transcript_tokens: int = 0


@dataclass
class ReplayReport:
    file: Path
    context_window: int | None
    steps: list[Step] = field(default_factory=list)
    turns: int = 0
    errors: list[str] = field(default_factory=list)
    skipped: int = 0
    transcript: list[dict[str, Any]] = field(default_factory=list)  # the stored session, as the pipeline reads it
    threshold_tokens: int | None = None  # the server's compaction threshold for the session (getContextView)

    @property
    def tokens_sent(self) -> int:
        return sum(s.view_tokens for s in self.steps)

    @property
    def naive_tokens(self) -> int:
        return sum(s.transcript_tokens for s in self.steps)

    @property
    def compactions(self) -> int:
        return sum(s.compacted for s in self.steps)

    def modes(self) -> dict[str, int]:
        return dict(Counter(s.mode for s in self.steps))

    def summary(self) -> dict[str, Any]:
        """The closing ``--json`` line."""
        return {
            "steps": len(self.steps),
            "tokensSent": self.tokens_sent,
            "naiveTokens": self.naive_tokens,
            "compactions": self.compactions,
            "modes": self.modes(),
        }


class _Tracker:
    """Turns the notification stream into steps."""

    def __init__(self, report: ReplayReport):
        self.report = report
        self.turn = 0
        self.last_seq = 0
        self.pending: str | None = None  # mode announced for the next call
        self.turn_mode: str | None = None  # a view that is not announced repeats the turn's last compaction

    def __call__(self, method: str, params: Any) -> None:
        if method != "sessionUpdate":
            return
        update = params.get("update") or {}
        if isinstance(params.get("messageSeq"), int):
            self.last_seq = max(self.last_seq, params["messageSeq"])
        kind = update.get("kind")
        if kind == "turnStarted":
            self.turn += 1
            self.turn_mode = None
        elif kind == "contextCompacted":
            self.pending = self.turn_mode = update["mode"]
        elif kind == "usage":
            mode = self.pending or self.turn_mode or "full"
            self.report.steps.append(
                Step(self.turn, self.last_seq, update["contextTokens"], mode, self.pending is not None)
            )
            self.pending = None


def _write_config(home: Path, keep_recent: int | None) -> None:
    lines = ['approval_policy = "auto"', f"max_iterations = {UNLIMITED_ITERATIONS}"]
    if keep_recent is not None:
        lines += ["[context]", f"keep_recent_tokens = {keep_recent}"]
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


async def _transcript(client: Client, session_id: str) -> list[dict[str, Any]]:
    """The stored session by seq (index 0 = seq 1) in the pipeline's input shape."""
    messages: list[dict[str, Any]] = []
    after = 0
    while True:
        params = {"sessionId": session_id, "afterSeq": after, "limit": 1000}
        page = await client.call("readTranscript", params, ReadTranscriptResult)
        for item in page.items:
            messages.append(transcript_message(item))
            after = item.seq
        if page.next_seq is None:
            return messages


def transcript_message(item: TranscriptItem) -> dict[str, Any]:
    """A ``readTranscript`` item in the shape the server's pipeline reads and estimates a stored message, by the
    server's own conversion (``server.context.messages``), so its token estimate is the one the store made."""
    return pipeline_message(
        item.seq,
        item.role,
        item.content,
        tool_calls=msgspec.to_builtins(item.tool_calls) if item.tool_calls else None,
        tool_call_id=item.tool_call_id,
        name=item.name,
        reasoning=item.reasoning,
        images=[(i.mime_type, i.data) for i in item.images or ()],
        status=item.status,
        tool_status=item.tool_status,
    )


async def replay_file(
    path: Path,
    context_window: int | None = None,
    keep_recent: int | None = None,
    on_step: Callable[..., Any] | None = None,
    requests_out: Path | None = None,
) -> ReplayReport:
    """Replay ``path`` through a real server on a throwaway home; returns the per-step report.

    With ``requests_out`` the server's replay provider writes one JSON line per model call, in order:
    ``{"step": i, "messages": [...]}`` (``i`` from 1, as in the report's table), the messages it received.
    """
    path = Path(path).resolve()
    plan = plan_replay(load_recording(path))
    if requests_out is not None:
        requests_out = Path(requests_out).resolve()
        requests_out.parent.mkdir(parents=True, exist_ok=True)
        requests_out.write_text("", encoding="utf-8")  # the provider appends; start empty
    report = ReplayReport(path, context_window, skipped=plan.skipped)
    with tempfile.TemporaryDirectory(prefix="threadline-replay-") as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        work.mkdir()
        _write_config(home, keep_recent)
        env = {"THREADLINE_HOME": str(home), REPLAY_ENV: str(path), "THREADLINE_APPROVAL_POLICY": "auto"}
        env[REQUESTS_OUT_ENV] = str(requests_out) if requests_out is not None else ""  # none leaks in
        if context_window is not None:
            env["THREADLINE_CONTEXT_WINDOW"] = str(context_window)
        else:
            env.update({k: v for k, v in os.environ.items() if k == "THREADLINE_CONTEXT_WINDOW"})
        client = await Client.spawn(env=env, args=[sys.executable, "-m", "server"], cwd=tmp)
        try:
            tracker = _Tracker(report)
            client.on_notification = tracker
            if plan.systems:
                created = await client.request(
                    "importSession",
                    {
                        "cwd": str(work),
                        "title": f"replay of {path.name}",
                        "messages": [{"role": "system", "content": text} for text in plan.systems],
                    },
                )
            else:
                created = await client.request("createSession", {"cwd": str(work), "title": f"replay of {path.name}"})
            sid = created["sessionId"]
            for text, _ in plan.turns:
                before = len(report.steps)
                # Recorded text is data: a recorded "/mode" is what the user wrote then, not a command (B-REC-1).
                params = {"sessionId": sid, "text": text, "literal": True}
                result = await client.request("submitTurn", params)
                report.turns += 1
                if result["stopReason"] != "endTurn":
                    error = (result.get("error") or {}).get("message", result["stopReason"])
                    report.errors.append(f"turn {report.turns}: {error}")
                if on_step:
                    for step in report.steps[before:]:
                        on_step(step)
            report.transcript = await _transcript(client, sid)
            view = await client.request("getContextView", {"sessionId": sid})
            report.threshold_tokens = view["thresholdTokens"]
        finally:
            await client.close()
    tokens = [estimate_message_tokens(m) for m in report.transcript]  # as the store computes them at write
    prefix = [0]
    for t in tokens:
        prefix.append(prefix[-1] + t)
    for step in report.steps:
        step.transcript_tokens = prefix[min(step.transcript_seq, len(tokens))]
    return report


def cache_breaks(requests_out: Path) -> list[int]:
    """The steps (from 1) whose request shares a message prefix of under half the previous request's tokens
    with it: where a provider's prefix cache would miss most of the request (SPEC section 14)."""
    breaks: list[int] = []
    previous: list[dict[str, Any]] = []
    previous_tokens = 0
    with open(requests_out, encoding="utf-8") as lines:
        for step, line in enumerate(lines, 1):
            messages = json.loads(line)["messages"]
            cached = 0
            for now, before in zip(messages, previous):
                if now != before:
                    break
                cached += estimate_message_tokens(now)
            if step > 1 and cached < BREAK_RATIO * previous_tokens:
                breaks.append(step)
            previous, previous_tokens = messages, sum(estimate_message_tokens(m) for m in messages)
    return breaks


def print_report(report: ReplayReport, out: TextIO, as_json: bool = False) -> None:
    """The per-step table, a closing line, and with ``as_json`` the summary as the last line."""
    out.write(f"{'step':>5} {'turn':>5} {'transcript':>11} {'view':>8}  mode\n")
    for i, s in enumerate(report.steps, 1):
        mark = "  <- compacted" if s.compacted else ""
        out.write(f"{i:>5} {s.turn:>5} {s.transcript_tokens:>11,} {s.view_tokens:>8,}  {s.mode}{mark}\n")
    naive, sent = report.naive_tokens, report.tokens_sent
    saved = f"{100 * (naive - sent) / naive:.0f}% less" if naive else "nothing to compare"
    modes = ", ".join(f"{k} {v}" for k, v in sorted(report.modes().items()))
    window = f"{report.context_window:,}-token window" if report.context_window else "default window"
    out.write(
        f"{report.file.name} at a {window}: {len(report.steps)} model calls in {report.turns} turns sent "
        f"{sent:,} tokens instead of {naive:,} ({saved}); {report.compactions} compactions; modes: {modes}\n"
    )
    for error in report.errors:
        out.write(f"error: {error}\n")
    if as_json:
        out.write(json.dumps(report.summary()) + "\n")
