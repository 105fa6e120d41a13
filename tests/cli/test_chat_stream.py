"""An answer rendered as it streams ends on the screen exactly as the whole answer rendered at once,
however the stream was cut (the live region's settled lines are printed once, in order, and the rest at the end)."""

from __future__ import annotations

import io
import itertools

import pyte
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markdown import Markdown

from server.cli.terminal import CODE_THEME, TerminalPrinter

WIDTH = 80
ANSWER = (
    "# Plan\n\nFirst **bold** and `code`, then a list:\n\n"
    + "".join(f"- item {n} with *emphasis*\n" for n in range(12))
    + "\n```python\n"
    + "".join(f"x{n} = {n}\n" for n in range(10))
    + "```\n\nThe end, with a [link](https://example.com).\n"
)


def screen_of(raw: str) -> list[str]:
    screen = pyte.Screen(WIDTH, 120)
    pyte.Stream(screen).feed(raw.replace("\n", "\r\n"))
    return [line.rstrip() for line in screen.display if line.strip()]


def console(out: io.StringIO) -> Console:
    return Console(file=out, force_terminal=True, width=WIDTH, height=50, highlight=False, markup=False)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(ANSWER) - 1), max_size=40, unique=True))
def test_issue_38_a_streamed_answer_ends_as_the_whole_answer_rendered(cuts):
    out = io.StringIO()
    printer = TerminalPrinter(out, console(out))
    printer.busy("waiting for the model")
    edges = [0, *sorted(cuts), len(ANSWER)]
    for a, b in itertools.pairwise(edges):
        printer.rendered_at = 0  # render at every delta: the hardest case for what is printed once
        printer.update({"kind": "assistantDelta", "text": ANSWER[a:b]})
    printer.update({"kind": "assistantMessage", "content": ANSWER})
    printer.end_stream()
    whole = io.StringIO()
    console(whole).print(Markdown(ANSWER, code_theme=CODE_THEME, hyperlinks=False))
    assert screen_of(out.getvalue()) == screen_of(whole.getvalue())
