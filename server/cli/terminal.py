"""``threadline chat`` at a terminal: the same updates as ``server.cli.chat.Printer`` prints, rendered with rich.

- The answer is markdown, rendered as it streams: lines markdown can no longer change are printed for good, the
  last few stay in a live region under which a status line says what is happening and for how long
  (``waiting for the model · 12 s``, ``running: pytest -q · 34 s``, ``compacting · 3 s``) beside the context
  meter (size, cached share, cost), so a long answer keeps it in sight. The region is redrawn once a second and
  cleared when the output it waited for arrives.
- Tool calls and results are compact coloured lines (✓/✗, long outputs folded with a count), diffs are coloured,
  and an approval is a framed panel with the live region stopped, so the prompt is never redrawn over.
- Everything shown passes through ``printable`` and is given to rich as ``Text`` (never markup), so neither a
  command's output nor the model can move the cursor or restyle the screen.

rich costs a noticeable part of a second to import on a loaded machine, so only a chat at a terminal imports
this module; piped output stays ``Printer``'s plain text.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.control import Control
from rich.live import Live
from rich.markdown import Markdown
from rich.panel import Panel
from rich.segment import Segment, Segments
from rich.text import Text

from server.cli.printer import Printer, diff_lines, fold, meter_line, printable
from server.cli.words import hint, turn_words

LIVE_TAIL = 6  # lines at the end of a streaming answer that markdown may still change: kept in the live region
RENDER_EVERY = 0.08  # seconds between two renderings of a streaming answer (each renders it whole)
RENDER_SHARE = 0.25  # and at most this share of the time: a long answer is rendered less often, not more slowly
TICK = 1.0  # the status line's clock
CODE_THEME = "monokai"
ENDS = {"done": "green", "cancelled": "yellow", "stopped": "yellow", "failed": "red"}
NOTICE_STYLES = {"warning": "yellow", "error": "bold red", "info": "dim"}


class TerminalPrinter(Printer):
    """``Printer`` for a person at a terminal: what changes is how each update looks, not what is said."""

    def __init__(self, out: TextIO, console: Console | None = None):
        super().__init__(out)
        self.console = console or Console(file=out, highlight=False, markup=False, emoji=False)
        self.live: Live | None = None
        self.ticker: asyncio.Task[None] | None = None
        self.activity = "working"
        self.since = time.monotonic()
        self.turn_since: float | None = None
        self.meter: str | None = None
        self.answer = ""  # the streaming answer's text so far
        self.shown = 0  # how many of its rendered lines are printed for good
        self.tail: list[list[Segment]] = []  # the rest, shown in the live region
        self.rendered_at = 0.0
        self.render_cost = 0.0  # how long the last rendering of the answer took

    # --- what the live region shows -------------------------------------------------------------------------

    def __rich__(self) -> RenderableType:
        status = Text()
        status.append("● ", style="cyan")
        status.append(f"{self.activity} · {int(time.monotonic() - self.since)} s", style="bold")
        if self.meter:
            status.append(f"   {self.meter}", style="dim")
        if not self.tail:
            return status
        return Group(Segments([seg for line in self.tail for seg in (*line, Segment.line())]), status)

    def busy(self, activity: str | None) -> None:
        """Say what is being waited for (the clock restarts); None: nothing is, the live region goes."""
        if activity is None:
            self._stop_live()
            return
        self.activity, self.since = activity, time.monotonic()
        if self.live is None:
            self.live = Live(
                self,
                console=self.console,
                auto_refresh=False,  # redrawn by our clock on the event loop, never from another thread
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()
            with contextlib.suppress(RuntimeError):  # no running loop: a still status line
                self.ticker = asyncio.get_running_loop().create_task(self._tick())
        self.live.refresh()

    def typed(self, line: str) -> None:
        """A line typed while the status line shows: the terminal echoed it there, and its Enter moved the cursor
        a line down, under the live region; back up, so the next redraw replaces that line, and keep what was
        typed as a line of its own."""
        if self.live is None:
            return
        self.console.control(Control.move(0, -1))
        self._print(Text(f"» {printable(line)}", style="dim"))

    async def _tick(self) -> None:
        while self.live is not None:
            await asyncio.sleep(TICK)
            if self.live is not None:
                self.live.refresh()

    def _stop_live(self) -> None:
        self._finish_answer()
        if self.ticker is not None:
            self.ticker.cancel()
            self.ticker = None
        if self.live is not None:
            live, self.live = self.live, None
            live.stop()

    # --- output --------------------------------------------------------------------------------------------------

    def _print(self, *renderables: RenderableType) -> None:
        self.console.print(*renderables)

    def write(self, line: str) -> None:
        self._finish_answer()
        self._print(Text(printable(line)))

    def end_stream(self) -> None:
        self._stop_live()

    def _stream(self, text: str) -> None:
        if not self.answer:
            self.busy("answering")
        self.answer += text
        if time.monotonic() - self.rendered_at >= max(RENDER_EVERY, self.render_cost / RENDER_SHARE):
            self._render_answer(final=False)

    def _render_answer(self, final: bool) -> None:
        """Print the answer's lines that are settled (all of them when ``final``); the rest go live."""
        started = time.monotonic()
        if not self.answer:
            return
        markdown = Markdown(printable(self.answer), code_theme=CODE_THEME, hyperlinks=False)
        lines = self.console.render_lines(markdown, self.console.options, pad=False)
        self.rendered_at = time.monotonic()
        self.render_cost = self.rendered_at - started
        settled = len(lines) if final else max(self.shown, len(lines) - LIVE_TAIL)
        if settled > self.shown:
            segments = [seg for line in lines[self.shown : settled] for seg in (*line, Segment.line())]
            self.console.print(Segments(segments), end="")
            self.shown = settled
        self.tail = [] if final else lines[self.shown :]
        if self.live is not None:
            self.live.refresh()

    def _finish_answer(self) -> None:
        if self.answer:
            self._render_answer(final=True)
        self.answer, self.shown, self.tail, self.render_cost = "", 0, [], 0.0

    # --- updates -------------------------------------------------------------------------------------------------

    def update(self, u: dict[str, Any], turn_id: str | None = None) -> None:
        kind = u.get("kind")
        if kind == "turnStarted":
            self.turn_since = time.monotonic()
            self.busy("waiting for the model")
        elif kind == "assistantDelta":
            self.streamed = True
            self._stream(u["text"])
        elif kind == "reasoningDelta":
            if not self.answer and self.activity != "thinking":
                self.busy("thinking")
        elif kind == "assistantMessage":
            if not self.streamed and u.get("content"):
                self.answer = u["content"]
            self._finish_answer()
            if u.get("interrupted"):
                self._print(Text("  (interrupted)", style="yellow"))
            self.streamed = False
            if self.live is not None:
                self.busy("working")
        elif kind == "toolCall":
            title = printable(str(u.get("title") or u["tool"]))
            self._finish_answer()
            self._print(Text.assemble(("→ ", "cyan"), (title, "bold")))
            self.busy(running(u))
        elif kind == "toolResult":
            self._tool_result(u, turn_id)
            self.busy("waiting for the model")
        elif kind == "usage":
            self.meter = meter_line(u)
            self.write_styled(self.meter, "dim")
        elif kind == "contextCompacting":  # a compaction the server runs (in a turn, or /compact's)
            self._finish_answer()
            self.busy("compacting")
        elif kind == "contextCompacted":
            line = f"context compacted ({u['mode']}): {u['beforeTokens']:,} -> {u['afterTokens']:,} tokens"
            self.write_styled(line, "magenta")
            if self.turn_since is not None:  # in a turn, the model call it made room for comes next
                self.busy("waiting for the model")
        elif kind == "notice":
            level = str(u.get("level", "info"))
            self.write_styled(f"{'!' if level != 'info' else '·'} {u.get('message', '')}", NOTICE_STYLES.get(level, ""))
        else:
            super().update(u, turn_id)

    def write_styled(self, line: str, style: str) -> None:
        self._finish_answer()
        self._print(Text(printable(line), style=style))

    def _tool_result(self, u: dict[str, Any], turn_id: str | None) -> None:
        status = str(u.get("status"))
        mark, style = ("✓", "green") if status == "ok" else ("✗ denied" if status == "denied" else "✗", "red")
        rows = fold(u.get("content") or "")
        first = Text("  ")
        first.append(mark, style=f"bold {style}")
        first.append(" " + printable(rows[0]))
        self._print(first)
        for row in rows[1:]:
            self._print(Text(" " * (len(mark) + 3) + printable(row), style="dim"))
        diff = u.get("diff")
        if status == "ok" and isinstance(diff, dict) and turn_id:
            self.applied(turn_id, u["toolCallId"], diff)

    def applied(self, turn_id: str, call_id: str, diff: dict[str, Any]) -> None:
        self.last_edit = (turn_id, call_id, str(diff.get("path")))
        if call_id not in self.asked:
            self._print(diff_text(diff_lines(diff), "    "))
        self._print(Text("    (/undo rewinds this edit)", style="dim"))

    # --- approvals and the end of a turn ------------------------------------------------------------------------

    def approval(self, params: dict[str, Any]) -> None:
        self._stop_live()  # the prompt that follows must not be redrawn over
        detail = printable(str(params.get("detail") or ""))
        body = diff_text(detail.splitlines(), "") if params.get("diff") else Text(detail)
        title = Text(f"approval needed: {printable(str(params.get('title') or params.get('tool')))}", style="bold")
        if params.get("outsideSandbox"):  # B-SBX-3: said before anything else
            self._print(Text("!! this command would run OUTSIDE the sandbox, with all your rights", style="bold red"))
        self._print(Panel(body, title=title, title_align="left", border_style="yellow", expand=False))

    def answered(self, params: dict[str, Any], decision: str) -> None:
        if decision != "reject" and self.turn_since is not None:
            self.busy(running(params))

    def ended(self, result: dict[str, Any]) -> None:
        self._stop_live()
        words = turn_words(result)
        took = f" · {int(time.monotonic() - self.turn_since)} s" if self.turn_since is not None else ""
        self.turn_since = None
        style = ENDS.get(words.split(" ")[0].rstrip(":"), "")
        mark = "✓" if words == "done" else "■" if style == "yellow" else "✗"
        self._print(Text(f"{mark} {printable(words)}{took}", style=f"bold {style}"))
        said = hint(result)
        if said:
            self._print(Text(f"  → {said}", style="yellow"))


def running(call: dict[str, Any]) -> str:
    """``running: pytest -q`` for a command (its title without the tool's name), ``running: read_file: x`` else."""
    tool, title = str(call.get("tool")), printable(str(call.get("title") or call.get("tool")))
    return f"running: {title.removeprefix('run_command: ') if tool == 'run_command' else title}"


def diff_text(rows: list[str], indent: str) -> Text:
    """A unified diff's rows, coloured as a terminal diff is: additions green, removals red, hunks cyan."""
    text = Text()
    for n, row in enumerate(rows):
        row = printable(row)
        style = (
            "bold"
            if row.startswith(("+++", "---"))
            else "green"
            if row.startswith("+")
            else "red"
            if row.startswith("-")
            else "cyan"
            if row.startswith("@@")
            else "dim"
            if row.startswith("…")
            else ""
        )
        text.append(("\n" if n else "") + indent + row, style=style)
    return text
