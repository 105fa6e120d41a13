"""``threadline demo`` on a machine with no provider: replays the bundled session and writes a valid PNG."""

from __future__ import annotations

import subprocess

from server.cli.plot import PURPLE
from tests.harness import REPO, server_env
from tests.cli.test_plot import decode_png

THREADLINE = REPO / ".venv" / "bin" / "threadline"


def test_demo_draws_its_picture_without_a_provider(tmp_path):
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    result = subprocess.run([str(THREADLINE), "demo"], env=server_env(tmp_path / "home"), cwd=cwd,
                            capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    picture = cwd / "threadline-demo.png"
    assert f"picture: {picture}" in result.stdout
    assert "compactions" in result.stdout and "threadline chat" in result.stdout
    width, height, rgb = decode_png(picture.read_bytes())
    assert (width, height) == (960, 540)
    assert bytes(PURPLE) in rgb  # compactions are marked
    assert not (tmp_path / "home").exists()  # the demo's server used a throwaway home
