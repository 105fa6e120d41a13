"""``threadline demo``: replay the bundled real session at a small window and draw what the pipeline did.

No API key and no network: the replay provider answers from the recording (``server.replay``). The picture shows
the transcript's size against the request view actually sent at every model call, the threshold, and each
compaction, and where the prompt cache broke (a call whose unchanged prefix is under half the previous request).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from server.cli.plot import BLUE, GREEN, ORANGE, PURPLE, RED, LineChart
from server.cli.replay_run import ReplayReport

DEMO_WINDOW = 16_000
DEMO_SESSION = "kimi-cli-session.json"
DEFAULT_PICTURE = Path("threadline-demo.svg")


def demo_session() -> Path:
    """The bundled recording (package data, so it ships with the wheel)."""
    return Path(str(resources.files("server.cli") / "demo_data" / DEMO_SESSION))


def draw(report: ReplayReport, threshold: int, title: str, breaks: Sequence[int] = ()) -> str:
    """Transcript size vs request-view size per step, the threshold, the compactions and, along the x axis, the
    calls that broke the prompt cache (``breaks``: steps from 1, see ``replay_run.cache_breaks``), as SVG."""
    chart = LineChart(title=title, xlabel="model call (step)", ylabel="tokens")
    steps = list(enumerate(report.steps, 1))
    chart.line([(i, s.transcript_tokens) for i, s in steps], BLUE, "transcript (naive resend)")
    chart.line([(i, s.view_tokens) for i, s in steps], ORANGE, "request view sent")
    chart.line([(1, threshold), (max(len(steps), 2), threshold)], RED, "threshold", dashed=True)
    chart.markers([(i, s.view_tokens) for i, s in steps if s.compacted], PURPLE, "compaction")
    if breaks:  # a rug on the axis: most breaks are compactions, whose markers would hide them on the line
        chart.markers([(i, 0) for i in breaks], GREEN, "cache break (cached prefix < half the last request)")
    return chart.svg()
