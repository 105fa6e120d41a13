"""Small dependency-free charts written as SVG text (the demo's picture and the benchmark plots).

Only the standard library: the demo must draw on a fresh machine after ``pip install -e .``, and a plotting
library (matplotlib pulls numpy, pillow and five more) would triple the install for one picture. SVG is text,
so a browser or an editor shows it and a test reads it back with ``xml.etree``. Each series is one
``<g class="series" data-label=...>`` group, named as in the legend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

__all__ = ["BLUE", "GRAY", "GREEN", "ORANGE", "PURPLE", "RED", "BarChart", "LineChart", "nice_step", "short_number"]

Color = str
BLACK: Color = "#1e1e1e"
GRID: Color = "#e4e4e4"
GRAY: Color = "#787878"
BLUE: Color = "#1f77b4"
ORANGE: Color = "#e67814"
RED: Color = "#c82828"
GREEN: Color = "#2ca02c"
PURPLE: Color = "#9467bd"
FONT = 'font-family="sans-serif" font-size="12"'


def nice_step(span: float, target: int = 5) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about ``target`` ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def short_number(value: float) -> str:
    """1200 -> 1.2K, 3000000 -> 3M."""
    for size, suffix in ((1e6, "M"), (1e3, "K")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 12, color: Color = BLACK) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" fill="{color}">{escape(text)}</text>'
    )


def _series(label: str | None, body: list[str]) -> str:
    name = f" data-label={quoteattr(label)}" if label else ""
    return f'<g class="series"{name}>' + "".join(body) + "</g>"


@dataclass
class _Frame:
    title: str
    xlabel: str
    ylabel: str
    width: int = 960
    height: int = 540
    legend: list[tuple[str, Color]] = field(default_factory=list)
    left: int = 80
    right: int = 24
    top: int = 64
    bottom: int = 64

    def plot_box(self) -> tuple[int, int, int, int]:
        return self.left, self.top, self.width - self.right, self.height - self.bottom

    def _ytop(self, ymax: float) -> tuple[float, float]:
        step = nice_step(ymax)
        return max(step * math.ceil(ymax / step), step), step

    def _ypos(self, v: float, top_value: float) -> float:
        _, y0, _, y1 = self.plot_box()
        return y1 - (y1 - y0) * v / top_value

    def _frame(self, ymax: float, xticks: list[tuple[float, str]]) -> tuple[list[str], float]:
        """The axes, ticks, grid, titles and legend; returns them and the y axis's top value."""
        x0, y0, x1, y1 = self.plot_box()
        top_value, step = self._ytop(ymax)
        out = [f'<rect width="{self.width}" height="{self.height}" fill="white"/>', '<g class="axes">']
        v = 0.0
        while v <= top_value + step / 2:
            y = self._ypos(v, top_value)
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="{GRID}"/>')
            out.append(_text(x0 - 6, y + 4, short_number(v), "end", color=GRAY))
            v += step
        for x, label in xticks:
            out.append(f'<line x1="{x:.1f}" y1="{y1}" x2="{x:.1f}" y2="{y1 + 4}" stroke="{GRAY}"/>')
            out.append(_text(x, y1 + 18, label, "middle", color=GRAY))
        out.append(f'<polyline points="{x0},{y0} {x0},{y1} {x1},{y1}" fill="none" stroke="{BLACK}"/>')
        out.append("</g>")
        out.append(f'<g class="title">{_text(self.width / 2, 28, self.title, "middle", 18)}</g>')
        out.append(f'<g class="xlabel">{_text((x0 + x1) / 2, self.height - 16, self.xlabel, "middle")}</g>')
        mid = (y0 + y1) / 2  # along the y axis, clear of the legend above the plot
        out.append(
            f'<g class="ylabel" transform="rotate(-90 20 {mid:.1f})">{_text(20, mid, self.ylabel, "middle")}</g>'
        )
        out.append('<g class="legend">')
        lx = float(x1)
        for label, color in reversed(self.legend):
            lx -= 7 * len(label) + 26
            out.append(f'<rect x="{lx:.1f}" y="{y0 - 22}" width="12" height="8" fill="{color}"/>')
            out.append(_text(lx + 16, y0 - 14, label))
        out.append("</g>")
        return out, top_value

    def _document(self, body: list[str]) -> str:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" {FONT}>\n' + "\n".join(body) + "\n</svg>\n"
        )


@dataclass
class LineChart(_Frame):
    """Lines over a numeric x axis, with optional markers and dashed reference lines."""

    lines: list[tuple[list[tuple[float, float]], Color, bool, str | None]] = field(default_factory=list)
    points: list[tuple[list[tuple[float, float]], Color, str | None]] = field(default_factory=list)

    def line(
        self, xy: Sequence[tuple[float, float]], color: Color, label: str | None = None, dashed: bool = False
    ) -> LineChart:
        self.lines.append((list(xy), color, dashed, label))
        if label:
            self.legend.append((label, color))
        return self

    def markers(self, xy: Sequence[tuple[float, float]], color: Color, label: str | None = None) -> LineChart:
        self.points.append((list(xy), color, label))
        if label:
            self.legend.append((label, color))
        return self

    def svg(self) -> str:
        every = [p for xy, *_ in self.lines for p in xy] + [p for xy, *_ in self.points for p in xy]
        xmin = min((x for x, _ in every), default=0.0)
        xmax = max((x for x, _ in every), default=1.0)
        ymax = max((y for _, y in every), default=1.0) or 1.0
        x0, _, x1, _ = self.plot_box()
        span = (xmax - xmin) or 1.0

        def xpos(x: float) -> float:
            return x0 + (x1 - x0) * (x - xmin) / span

        step = nice_step(span)
        first = math.ceil(xmin / step) * step
        ticks = [
            (xpos(first + k * step), short_number(first + k * step)) for k in range(int((xmax - first) / step) + 1)
        ]
        body, top = self._frame(ymax, ticks)
        for xy, color, dashed, label in self.lines:
            points = " ".join(f"{xpos(x):.1f},{self._ypos(y, top):.1f}" for x, y in xy)
            dash = ' stroke-dasharray="6 6"' if dashed else ""
            body.append(
                _series(label, [f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"{dash}/>'])
            )
        for xy, color, label in self.points:
            body.append(
                _series(
                    label,
                    [
                        f'<circle cx="{xpos(x):.1f}" cy="{self._ypos(y, top):.1f}" r="3.5" fill="{color}"/>'
                        for x, y in xy
                    ],
                )
            )
        return self._document(body)


@dataclass
class BarChart(_Frame):
    """Grouped bars: one group per category, one bar per series."""

    categories: list[str] = field(default_factory=list)
    series: list[tuple[list[float], Color, str]] = field(default_factory=list)

    def bars(self, values: Sequence[float], color: Color, label: str) -> BarChart:
        self.series.append((list(values), color, label))
        self.legend.append((label, color))
        return self

    def svg(self) -> str:
        x0, _, x1, y1 = self.plot_box()
        group = (x1 - x0) / max(len(self.categories), 1)
        ymax = max((v for values, *_ in self.series for v in values), default=1.0) or 1.0
        body, top = self._frame(ymax, [(x0 + group * (i + 0.5), c) for i, c in enumerate(self.categories)])
        width = group * 0.8 / max(len(self.series), 1)
        for s, (values, color, label) in enumerate(self.series):
            bars = []
            for i, v in enumerate(values):
                left, y = x0 + group * i + group * 0.1 + width * s, self._ypos(v, top)
                bars.append(
                    f'<rect x="{left:.1f}" y="{y:.1f}" width="{max(width - 2, 1):.1f}" '
                    f'height="{y1 - y:.1f}" fill="{color}" data-value="{v:g}"/>'
                )
            body.append(_series(label, bars))
        return self._document(body)
