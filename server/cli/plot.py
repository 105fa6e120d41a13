"""Small dependency-free charts written as PNG (the demo's picture and the benchmark plots).

Only ``zlib`` and ``struct``: the demo must draw on a fresh machine after ``pip install -e .``, and a plotting
library (matplotlib pulls numpy, pillow and five more) would triple the install for one picture. What is here is
what those pictures need: axes with round ticks, lines, dashed lines, markers, grouped bars, a legend, and text
in a 5x7 pixel font (upper case, digits, common punctuation).
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["BLUE", "GRAY", "GREEN", "ORANGE", "PURPLE", "RED", "BarChart", "LineChart", "encode_png"]

Color = tuple[int, int, int]
WHITE: Color = (255, 255, 255)
BLACK: Color = (30, 30, 30)
GRID: Color = (228, 228, 228)
GRAY: Color = (120, 120, 120)
BLUE: Color = (31, 119, 180)
ORANGE: Color = (230, 120, 20)
RED: Color = (200, 40, 40)
GREEN: Color = (44, 160, 44)
PURPLE: Color = (148, 103, 189)

_GLYPHS = {
    "A": "01110 10001 10001 11111 10001 10001 10001", "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110", "D": "11110 10001 10001 10001 10001 10001 11110",
    "E": "11111 10000 10000 11110 10000 10000 11111", "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111", "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110", "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001", "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001", "N": "10001 10001 11001 10101 10011 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110", "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101", "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110", "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110", "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010", "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 01010 00100 00100 00100 00100", "Z": "11111 00001 00010 00100 01000 10000 11111",
    "0": "01110 10001 10011 10101 11001 10001 01110", "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111", "3": "11111 00010 00100 00010 00001 10001 01110",
    "4": "00010 00110 01010 10010 11111 00010 00010", "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110", "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110", "9": "01110 10001 10001 01111 00001 00010 01100",
    " ": "00000 00000 00000 00000 00000 00000 00000", ".": "00000 00000 00000 00000 00000 01100 01100",
    ",": "00000 00000 00000 00000 01100 00100 01000", ":": "00000 01100 01100 00000 01100 01100 00000",
    "-": "00000 00000 00000 11111 00000 00000 00000", "+": "00000 00100 00100 11111 00100 00100 00000",
    "(": "00010 00100 01000 01000 01000 00100 00010", ")": "01000 00100 00010 00010 00010 00100 01000",
    "/": "00000 00001 00010 00100 01000 10000 00000", "%": "11000 11001 00010 00100 01000 10011 00011",
    "=": "00000 00000 11111 00000 11111 00000 00000", "_": "00000 00000 00000 00000 00000 00000 11111",
    "'": "01100 00100 01000 00000 00000 00000 00000", "<": "00010 00100 01000 10000 01000 00100 00010",
    ">": "01000 00100 00010 00001 00010 00100 01000", "?": "01110 10001 00001 00010 00100 00000 00100",
    "[": "01110 01000 01000 01000 01000 01000 01110", "]": "01110 00010 00010 00010 00010 00010 01110",
}
FONT = {ch: [[bit == "1" for bit in row] for row in rows.split()] for ch, rows in _GLYPHS.items()}


def encode_png(width: int, height: int, rgb: bytes | bytearray) -> bytes:
    """An 8-bit RGB PNG of ``rgb`` (rows top to bottom, 3 bytes a pixel)."""
    if len(rgb) != width * height * 3:
        raise ValueError("pixel data does not match the size")
    stride = width * 3
    raw = b"".join(b"\x00" + bytes(rgb[y * stride:(y + 1) * stride]) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


class Canvas:
    def __init__(self, width: int, height: int, background: Color = WHITE):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def dot(self, x: int, y: int, color: Color, size: int = 1) -> None:
        half = size // 2
        for yy in range(y - half, y - half + size):
            if 0 <= yy < self.height:
                for xx in range(x - half, x - half + size):
                    if 0 <= xx < self.width:
                        i = (yy * self.width + xx) * 3
                        self.pixels[i:i + 3] = bytes(color)

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: Color) -> None:
        for y in range(max(min(y0, y1), 0), min(max(y0, y1), self.height - 1) + 1):
            left, right = max(min(x0, x1), 0), min(max(x0, x1), self.width - 1)
            if left <= right:
                i = (y * self.width + left) * 3
                self.pixels[i:i + 3 * (right - left + 1)] = bytes(color) * (right - left + 1)

    def line(self, x0: float, y0: float, x1: float, y1: float, color: Color, width: int = 1,
             dash: int = 0) -> None:
        steps = max(int(max(abs(x1 - x0), abs(y1 - y0))), 1)
        for k in range(steps + 1):
            if dash and (k // dash) % 2:
                continue
            t = k / steps
            self.dot(round(x0 + (x1 - x0) * t), round(y0 + (y1 - y0) * t), color, width)

    def text(self, x: int, y: int, text: str, color: Color = BLACK, scale: int = 1, anchor: str = "left") -> None:
        text = text.upper()
        w = self.text_width(text, scale)
        x = x - w if anchor == "right" else x - w // 2 if anchor == "center" else x
        for ch in text:
            glyph = FONT.get(ch, FONT["?"])
            for r, row in enumerate(glyph):
                for c, on in enumerate(row):
                    if on:
                        self.rect(x + c * scale, y + r * scale, x + (c + 1) * scale - 1, y + (r + 1) * scale - 1,
                                  color)
            x += 6 * scale

    @staticmethod
    def text_width(text: str, scale: int = 1) -> int:
        return max(len(text) * 6 * scale - scale, 0)

    def png(self) -> bytes:
        return encode_png(self.width, self.height, self.pixels)


def nice_step(span: float, target: int = 5) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about ``target`` ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def short_number(value: float) -> str:
    """1200 -> 1.2K, 3000000 -> 3M."""
    for size, suffix in ((1e6, "M"), (1e3, "K")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


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

    def draw_frame(self, canvas: Canvas, ymax: float, xticks: list[tuple[float, str]], xpos) -> Callable[[float], float]:
        x0, y0, x1, y1 = self.plot_box()
        step = nice_step(ymax)
        top_value = max(step * math.ceil(ymax / step), step)

        def ypos(v: float) -> float:
            return y1 - (y1 - y0) * v / top_value

        v = 0.0
        while v <= top_value + step / 2:
            y = round(ypos(v))
            canvas.line(x0, y, x1, y, GRID)
            canvas.text(x0 - 6, y - 3, short_number(v), GRAY, anchor="right")
            v += step
        for value, label in xticks:
            x = round(xpos(value))
            canvas.line(x, y1, x, y1 + 4, GRAY)
            canvas.text(x, y1 + 8, label, GRAY, anchor="center")
        canvas.line(x0, y1, x1, y1, BLACK)
        canvas.line(x0, y0, x0, y1, BLACK)
        canvas.text(self.width // 2, 16, self.title, BLACK, scale=2, anchor="center")
        canvas.text((x0 + x1) // 2, self.height - 22, self.xlabel, BLACK, anchor="center")
        canvas.text(8, y0 - 18, self.ylabel, BLACK)
        lx = x1
        for label, color in reversed(self.legend):
            lx -= Canvas.text_width(label) + 26
            canvas.rect(lx, y0 - 20, lx + 12, y0 - 14, color)
            canvas.text(lx + 16, y0 - 20, label, BLACK)
        return ypos


@dataclass
class LineChart(_Frame):
    """Lines over a numeric x axis, with optional markers and horizontal reference lines."""

    lines: list[tuple[list[tuple[float, float]], Color, bool]] = field(default_factory=list)
    points: list[tuple[list[tuple[float, float]], Color]] = field(default_factory=list)

    def line(self, xy: Sequence[tuple[float, float]], color: Color, label: str | None = None,
             dashed: bool = False) -> LineChart:
        self.lines.append((list(xy), color, dashed))
        if label:
            self.legend.append((label, color))
        return self

    def markers(self, xy: Sequence[tuple[float, float]], color: Color, label: str | None = None) -> LineChart:
        self.points.append((list(xy), color))
        if label:
            self.legend.append((label, color))
        return self

    def png(self) -> bytes:
        canvas = Canvas(self.width, self.height)
        every = [p for xy, _, _ in self.lines for p in xy] + [p for xy, _ in self.points for p in xy]
        xmin = min((x for x, _ in every), default=0.0)
        xmax = max((x for x, _ in every), default=1.0)
        ymax = max((y for _, y in every), default=1.0) or 1.0
        x0, _, x1, _ = self.plot_box()
        span = (xmax - xmin) or 1.0

        def xpos(x: float) -> float:
            return x0 + (x1 - x0) * (x - xmin) / span

        step = nice_step(span)
        first = math.ceil(xmin / step) * step
        ticks = [(first + k * step, short_number(first + k * step))
                 for k in range(int((xmax - first) / step) + 1)]
        ypos = self.draw_frame(canvas, ymax, ticks, xpos)
        for xy, color, dashed in self.lines:
            for (xa, ya), (xb, yb) in zip(xy, xy[1:]):
                canvas.line(xpos(xa), ypos(ya), xpos(xb), ypos(yb), color, 2, dash=6 if dashed else 0)
        for xy, color in self.points:
            for x, y in xy:
                canvas.dot(round(xpos(x)), round(ypos(y)), color, 7)
        return canvas.png()


@dataclass
class BarChart(_Frame):
    """Grouped bars: one group per category, one bar per series."""

    categories: list[str] = field(default_factory=list)
    series: list[tuple[list[float], Color]] = field(default_factory=list)

    def bars(self, values: Sequence[float], color: Color, label: str) -> BarChart:
        self.series.append((list(values), color))
        self.legend.append((label, color))
        return self

    def png(self) -> bytes:
        canvas = Canvas(self.width, self.height)
        x0, _, x1, y1 = self.plot_box()
        n = max(len(self.categories), 1)
        group = (x1 - x0) / n

        def xpos(i: float) -> float:
            return x0 + group * (i + 0.5)

        ymax = max((v for values, _ in self.series for v in values), default=1.0) or 1.0
        ypos = self.draw_frame(canvas, ymax, [(i, c) for i, c in enumerate(self.categories)], xpos)
        width = group * 0.8 / max(len(self.series), 1)
        for s, (values, color) in enumerate(self.series):
            for i, v in enumerate(values):
                left = x0 + group * i + group * 0.1 + width * s
                canvas.rect(round(left), round(ypos(v)), round(left + width) - 2, y1 - 1, color)
        return canvas.png()
