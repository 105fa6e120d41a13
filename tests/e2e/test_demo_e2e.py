"""``threadline demo`` on a machine with no provider: replays the bundled session and writes an SVG picture that
shows the compactions and where the prompt cache broke."""

from __future__ import annotations

import re
import subprocess

from tests.cli.test_plot import parse, series, texts
from tests.harness import REPO, server_env

THREADLINE = REPO / ".venv" / "bin" / "threadline"


def test_demo_draws_its_picture_without_a_provider(tmp_path):
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    result = subprocess.run(
        [str(THREADLINE), "demo"],
        env=server_env(tmp_path / "home"),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    picture = cwd / "threadline-demo.svg"
    assert f"picture: {picture}" in result.stdout
    assert "compactions" in result.stdout and "threadline chat" in result.stdout
    root = parse(picture.read_text(encoding="utf-8"))
    assert (root.get("width"), root.get("height")) == ("960", "540")
    drawn = series(root)
    assert {"transcript (naive resend)", "request view sent", "threshold", "compaction"} <= set(drawn)
    counted = re.search(r"; (\d+) compactions", result.stdout)
    assert counted is not None, result.stdout
    compactions = int(counted.group(1))
    assert len(list(drawn["compaction"])) == compactions > 0  # every compaction is marked
    broke = re.search(r"(\d+) of \d+ model calls broke the prompt cache", result.stdout)
    assert broke is not None, result.stdout
    breaks = int(broke.group(1))
    cache = [label for label in drawn if label.startswith("cache break")]
    assert breaks > 0 and len(cache) == 1 and len(list(drawn[cache[0]])) == breaks  # where the cache broke
    assert cache[0] in texts(root)  # and the legend says so
    assert not (tmp_path / "home").exists()  # the demo's server used a throwaway home
