"""What ``threadline exec`` prints, in its three formats.

- ``text``: the answer streams to stdout; progress (tool calls, results, context meter, compactions, notices) to
  stderr, one line each.
- ``json``: exactly one JSON object on stdout, the ``result``, when the run ends.
- ``stream-json``: NDJSON on stdout, flushed line by line: ``init``, then one ``update`` per ``sessionUpdate`` of the
  session (its ``update`` as on the wire), then the ``result``.

In the JSON formats nothing else reaches stdout: ``guard_stdout`` points ``sys.stdout`` at stderr for the run, so a
stray print lands in the log, never in what a script parses.

A reader that goes away (``threadline exec ... | head -1``) is what Python's docs on SIGPIPE describe: the next write
raises ``BrokenPipeError``. ``Output`` then stops writing to that stream (pointing its descriptor at ``/dev/null``, as
those docs advise, so the interpreter's last flush does not fail again) and, for stdout, calls ``on_closed``: the
run stops (``server.cli.exec``). A closed stderr only silences the log.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from server.cli.printer import cached_share, fold, money, printable, tokens


@dataclass
class TurnRecord:
    """What the run's result is made of, gathered from the session's updates as they arrive."""

    last_answer: str = ""  # the content of the turn's last assistant message
    model_calls: int = 0  # calls that got an answer (one ``usage`` update each)
    totals: dict[str, Any] | None = None  # the session totals of the last ``usage`` update
    seen: list[str] = field(default_factory=list)  # update kinds, in order (for tests and logs)

    def take(self, update: dict[str, Any]) -> None:
        kind = str(update.get("kind"))
        self.seen.append(kind)
        if kind == "assistantMessage":
            self.last_answer = str(update.get("content") or "")
        elif kind == "usage":
            self.model_calls += 1
            if isinstance(update.get("totals"), dict):
                self.totals = update["totals"]


def dumps(obj: dict[str, Any]) -> str:
    """One JSON object on one line (a newline inside a string is escaped, so NDJSON stays one object a line)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class Output:
    """The ``text`` format; ``JsonOutput`` and ``StreamJsonOutput`` override what they print."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.streaming = False  # assistant text written without its line end yet
        self.streamed = False  # the current assistant message came as deltas
        self.closed = False  # stdout's reader went away: nothing more is written there
        self.err_closed = False
        self.on_closed: Callable[[], None] | None = None

    def init(self, info: dict[str, Any]) -> None:
        self.log(f"session {info['sessionId']} in {info['cwd']} · model {info['model'] or '?'}")
        self.log(f"approval policy {info['approvalPolicy']} · unattended: calls that would ask are refused")
        if worktree := info.get("worktree"):  # B-WT-1: where the work goes, and how it comes back
            self.log(
                f"worktree on branch {worktree['branch']} from {worktree['base']}: threadline worktrees merge|discard"
            )

    def update(self, u: dict[str, Any]) -> None:
        kind = u.get("kind")
        if kind == "assistantDelta":
            self.write(str(u.get("text", "")))
            self.streaming = self.streamed = True
        elif kind == "assistantMessage":
            if not self.streamed and u.get("content"):  # a provider that did not stream
                self.write(str(u["content"]))
                self.streaming = True
            self._end_answer()
            if u.get("interrupted"):
                self.log("  (interrupted)")
            self.streamed = False
        elif (line := progress_line(u)) is not None:
            self.log(line)

    def result(self, result: dict[str, Any]) -> None:
        self._end_answer()
        error = result.get("error")
        self.log(f"— {result['stopReason']}" + (f": {error['code']}: {error['message']}" if error else ""))
        self.log(f"session {result['sessionId']}")

    def write(self, text: str) -> None:
        """Write to stdout, flushed; when its reader has gone, stop writing there and call ``on_closed`` once."""
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            self.closed = True
            discard(self.out)
            if self.on_closed is not None:
                self.on_closed()

    def log(self, line: str) -> None:
        if self.err_closed:
            return
        try:
            self.err.write(printable(line) + "\n")
            self.err.flush()
        except BrokenPipeError:  # nobody reads the log any more; the run goes on (stdout decides that)
            self.err_closed = True
            discard(self.err)

    def _end_answer(self) -> None:
        if self.streaming:
            self.write("\n")
            self.streaming = False


class JsonOutput(Output):
    """``json``: the result object only; progress as ``text`` would show it goes to stderr."""

    def update(self, u: dict[str, Any]) -> None:
        if u.get("kind") not in ("assistantDelta", "reasoningDelta") and (line := progress_line(u)) is not None:
            self.log(line)

    def result(self, result: dict[str, Any]) -> None:
        self.line(result)

    def line(self, obj: dict[str, Any]) -> None:
        self.write(dumps(obj) + "\n")


class StreamJsonOutput(JsonOutput):
    """``stream-json``: every line is one JSON object, flushed as it happens."""

    def init(self, info: dict[str, Any]) -> None:
        self.line({"type": "init", **info})

    def update(self, u: dict[str, Any]) -> None:
        self.line({"type": "update", "update": u})


def output_for(fmt: str, out: TextIO, err: TextIO) -> Output:
    return {"text": Output, "json": JsonOutput, "stream-json": StreamJsonOutput}[fmt](out, err)


def progress_line(u: dict[str, Any]) -> str | None:
    """One stderr line for an update, or None for those that have none (deltas, the turn's own bookends)."""
    kind = u.get("kind")
    if kind == "toolCall":
        return f"→ {u.get('title') or u.get('tool')}"
    if kind == "toolResult":
        status = str(u.get("status"))
        mark = {"ok": "✓", "denied": "✗ denied", "error": "✗"}.get(status, status)
        rows = fold(str(u.get("content") or ""), lines=2)
        return "\n".join(f"  {mark if n == 0 else ' ' * len(mark)} {row}" for n, row in enumerate(rows))
    if kind == "usage":
        share, cost = cached_share(u), money(u)
        return (
            f"context {tokens(u.get('contextTokens'))}/{tokens(u.get('contextWindowTokens'))} tokens"
            + (f" · {share}" if share else "")
            + (f" · {cost}" if cost else "")
        )
    if kind == "contextCompacted":
        return f"context compacted ({u['mode']}): {tokens(u['beforeTokens'])} -> {tokens(u['afterTokens'])} tokens"
    if kind == "notice":
        return f"[{u.get('level', 'info')}] {u.get('message', '')}"
    if kind == "mcpServerStatus":
        return f"mcp {u.get('name')}: {u.get('state')}" + (f" ({u['reason']})" if u.get("reason") else "")
    if kind == "artifactCreated":
        return f"  [artifact {u.get('artifactId')}: {u.get('totalBytes')} bytes]"
    return None


def discard(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null (Python's docs on SIGPIPE): what it still buffers, and the
    interpreter's flush at exit, then go nowhere instead of raising ``BrokenPipeError`` again."""
    with contextlib.suppress(OSError, ValueError):  # a stream without a descriptor (a test's StringIO)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def guard_stdout(fmt: str) -> TextIO:
    """The real stdout, for the output; in the JSON formats ``sys.stdout`` then points at stderr."""
    real = sys.stdout
    if fmt != "text":
        sys.stdout = sys.stderr
    return real
