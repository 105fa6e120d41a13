"""The dependency-free SVG charts: well-formed SVG, one named group per series, the labels in the text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from server.cli.plot import BLUE, ORANGE, RED, BarChart, LineChart, nice_step, short_number

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def series(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-label", ""): g for g in root.iter(f"{SVG}g") if g.get("class") == "series"}


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_issue_14_line_chart_is_svg_with_each_series_named_and_drawn():
    chart = LineChart(title="growth & <limits>", xlabel="step", ylabel="tokens", width=300, height=200)
    chart.line([(0, 0), (10, 100)], BLUE, "up").line([(0, 50), (10, 50)], RED, "flat", dashed=True)
    chart.markers([(5, 50), (7, 20)], ORANGE, "mark")
    root = parse(chart.svg())
    assert (root.get("width"), root.get("height")) == ("300", "200")
    drawn = series(root)
    assert set(drawn) == {"up", "flat", "mark"}
    up = drawn["up"].find(f"{SVG}polyline")
    assert up is not None and up.get("stroke") == BLUE and len(up.get("points", "").split()) == 2
    flat = drawn["flat"].find(f"{SVG}polyline")
    assert flat is not None and flat.get("stroke-dasharray")
    assert [c.get("fill") for c in drawn["mark"].iter(f"{SVG}circle")] == [ORANGE, ORANGE]
    words = texts(root)
    assert {"growth & <limits>", "step", "tokens", "up", "flat", "mark"} <= set(words)  # escaped, then read back
    assert "100" in words and "0" in words  # y ticks


def test_issue_14_line_chart_points_rise_upwards_inside_the_frame():
    chart = LineChart(title="t", xlabel="x", ylabel="y", width=300, height=200)
    root = parse(chart.line([(0, 0), (10, 100)], BLUE, "up").svg())
    polyline = series(root)["up"].find(f"{SVG}polyline")
    assert polyline is not None
    (xa, ya), (xb, yb) = [tuple(map(float, p.split(","))) for p in polyline.get("points", "").split()]
    x0, y0, x1, y1 = chart.plot_box()
    assert (xa, xb) == (x0, x1) and ya == y1 and y0 <= yb < ya


def test_issue_14_bar_chart_draws_one_bar_per_category_and_series():
    chart = BarChart(title="bars", xlabel="", ylabel="", width=200, height=150, categories=["a", "b"])
    chart.bars([1, 2], BLUE, "one").bars([2, 1], ORANGE, "two")
    root = parse(chart.svg())
    drawn = series(root)
    assert set(drawn) == {"one", "two"}
    assert [r.get("data-value") for r in drawn["one"].iter(f"{SVG}rect")] == ["1", "2"]
    assert {r.get("fill") for r in drawn["two"].iter(f"{SVG}rect")} == {ORANGE}
    assert {"a", "b", "bars"} <= set(texts(root))


def test_ticks_are_round():
    assert nice_step(74_000) == 20_000 and nice_step(9) == 2 and nice_step(0) == 1
    assert (short_number(20_000), short_number(1_500_000), short_number(7)) == ("20K", "1.5M", "7")
