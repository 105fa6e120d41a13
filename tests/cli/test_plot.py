"""The dependency-free PNG charts: valid PNG files (signature, chunk CRCs, IHDR, pixel data) with the drawing in them."""

from __future__ import annotations

import struct
import zlib

from server.cli.plot import BLUE, FONT, ORANGE, RED, BarChart, Canvas, LineChart, encode_png, nice_step, short_number


def decode_png(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and RGB bytes of an 8-bit RGB, filter-0 PNG; checks every chunk's CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        pos += 12 + length
    assert [k for k, _ in chunks][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, color, *_ = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, color) == (8, 2)
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    stride = width * 3 + 1
    assert len(raw) == stride * height and all(raw[y * stride] == 0 for y in range(height))
    return width, height, b"".join(raw[y * stride + 1:(y + 1) * stride] for y in range(height))


def pixel(rgb: bytes, width: int, x: int, y: int) -> tuple[int, int, int]:
    i = (y * width + x) * 3
    r, g, b = rgb[i:i + 3]
    return r, g, b


def test_encode_png_round_trips_pixels():
    rgb = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30])
    assert decode_png(encode_png(2, 2, rgb)) == (2, 2, rgb)


def test_text_draws_the_glyph_bits():
    canvas = Canvas(20, 10)
    canvas.text(1, 1, "l", RED)  # lower case is drawn as upper case
    width, _, rgb = decode_png(canvas.png())
    for r, row in enumerate(FONT["L"]):
        for c, on in enumerate(row):
            assert (pixel(rgb, width, 1 + c, 1 + r) == RED) == on


def test_every_glyph_is_five_by_seven():
    assert all(len(g) == 7 and all(len(row) == 5 for row in g) for g in FONT.values())


def test_line_chart_draws_its_series_inside_the_frame():
    chart = LineChart(title="t", xlabel="x", ylabel="y", width=300, height=200)
    chart.line([(0, 0), (10, 100)], BLUE, "up").line([(0, 50), (10, 50)], RED, "flat", dashed=True)
    chart.markers([(5, 50)], ORANGE, "mark")
    width, height, rgb = decode_png(chart.png())
    assert (width, height) == (300, 200)
    colors = {pixel(rgb, width, x, y) for x in range(width) for y in range(height)}
    assert {BLUE, RED, ORANGE} <= colors


def test_bar_chart_draws_each_series():
    chart = BarChart(title="bars", xlabel="", ylabel="", width=200, height=150, categories=["a", "b"])
    chart.bars([1, 2], BLUE, "one").bars([2, 1], ORANGE, "two")
    width, height, rgb = decode_png(chart.png())
    colors = {pixel(rgb, width, x, y) for x in range(width) for y in range(height)}
    assert {BLUE, ORANGE} <= colors


def test_ticks_are_round():
    assert nice_step(74_000) == 20_000 and nice_step(9) == 2 and nice_step(0) == 1
    assert (short_number(20_000), short_number(1_500_000), short_number(7)) == ("20K", "1.5M", "7")
