"""``threadline replay`` on every shared trajectory, through the real server and loop.

The four replays run at once (each is its own server), so the module costs about as long as the slowest one.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import TRAJECTORIES
from tests.harness import REPO, server_env

THREADLINE = REPO / ".venv" / "bin" / "threadline"
WINDOW = 16_000
FILES = sorted(TRAJECTORIES.glob("*.json"))


@pytest.fixture(scope="module")
def replays(tmp_path_factory) -> dict[str, subprocess.CompletedProcess[str]]:
    home = tmp_path_factory.mktemp("home")  # replay uses a throwaway home of its own; this must stay empty
    procs = {
        f.name: subprocess.Popen(
            [str(THREADLINE), "replay", str(f), "--context-window", str(WINDOW), "--json"],
            env=server_env(home),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in FILES
    }
    done = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=110)
        done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert not any(home.iterdir()), "replay must not write to the caller's THREADLINE_HOME"
    return done


def test_every_shared_trajectory_is_present():
    assert len(FILES) == 4


@pytest.mark.parametrize("name", [f.name for f in FILES])
def test_replay_compacts_and_ends_with_the_json_line(replays, name):
    result = replays[name]
    assert result.returncode == 0, result.stderr + result.stdout[-2000:]
    lines = result.stdout.splitlines()
    summary = json.loads(lines[-1])
    assert set(summary) == {"steps", "tokensSent", "naiveTokens", "compactions", "modes"}
    assert summary["steps"] > 50
    assert summary["compactions"] >= 3
    assert summary["tokensSent"] < summary["naiveTokens"]
    assert sum(summary["modes"].values()) == summary["steps"]
    assert set(summary["modes"]) <= {"full", "microcompacted", "summarized", "fallback"}
    assert lines[-2].startswith(f"{name} at a 16,000-token window: {summary['steps']} model calls")
    table = [line.split() for line in lines[1:-2]]
    assert len(table) == summary["steps"]
    threshold = int(WINDOW * 0.8)
    for row in table:
        transcript, view = int(row[2].replace(",", "")), int(row[3].replace(",", ""))
        # The fallback window adds its fixed summary: on a short transcript it can outgrow what it replaces.
        assert view <= transcript or row[4] == "fallback", row
        assert view <= threshold or row[4] in ("fallback", "summarized"), row  # the tail alone may exceed it


def test_replay_of_a_missing_file_fails_cleanly(tmp_path):
    result = subprocess.run(
        [str(THREADLINE), "replay", str(tmp_path / "nope.json")],
        env=server_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "nope.json" in result.stderr and "Traceback" not in result.stderr
