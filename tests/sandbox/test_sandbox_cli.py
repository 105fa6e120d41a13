"""``threadline sandbox -- CMD ARGS`` (B-SBX-1) as a user runs it, and the launcher as an unprivileged user gets it.

Both real processes on this machine's kernel. The unprivileged test drops to ``nobody`` (when the tests run as
root, as in this container) and runs the stdlib-only launcher with the system Python: the same ``enter`` path,
but the user namespace is made without any privilege, as on a developer's machine or in CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from server.sandbox.policy import build_policy
from server.sandbox.runner import LAUNCHER, support
from tests.harness import server_env

pytestmark = pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}")
THREADLINE = [str(Path(sys.executable).parent / "threadline")]  # the installed entry point


def sandbox(cwd: Path, home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*THREADLINE, "sandbox", *argv],
        cwd=cwd,
        env=server_env(home, HOME=str(home.parent / "userhome"), **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_B_SBX_1_threadline_sandbox_confines_one_command_and_passes_its_status(tmp_path: Path):
    ws, home, outside = tmp_path / "ws", tmp_path / "home", tmp_path / "outside"
    for path in (ws, home, outside):
        path.mkdir()
    (home / "config.toml").write_text('[provider]\napi_key = "sk-secret-in-config"\n')
    done = sandbox(
        ws, home, "--", "bash", "-c", f"echo in > in.txt; echo out > {outside}/x; cat {home}/config.toml; exit 7"
    )
    assert done.returncode == 7
    assert (ws / "in.txt").read_text() == "in\n" and list(outside.iterdir()) == []
    assert "Permission denied" in done.stderr and "sk-secret" not in done.stdout + done.stderr
    assert sandbox(ws, home, "--mode", "read-only", "--", "touch", "ro.txt").returncode == 1
    assert not (ws / "ro.txt").exists()
    assert sandbox(ws, home, "--mode", "off", "--", "touch", f"{outside}/off").returncode == 0


def test_B_SBX_2_threadline_sandbox_refuses_to_run_unconfined(tmp_path: Path):
    (tmp_path / "home").mkdir()
    done = sandbox(tmp_path, tmp_path / "home", "--", "touch", "ran", THREADLINE_SANDBOX_PROBE="fail")
    assert done.returncode == 1 and "cannot enforce" in done.stderr and not (tmp_path / "ran").exists()


@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("setpriv"), reason="needs root to drop to nobody")
def test_B_SBX_1_an_unprivileged_user_gets_the_same_confinement():
    system_python = "/usr/bin/python3"
    if not os.access(system_python, os.X_OK):
        pytest.skip("no system python for the unprivileged user")
    root = Path(tempfile.mkdtemp(prefix="tl-sbx-nobody-"))
    try:
        ws, tmp = root / "ws", root / "tmp"
        (ws / ".git").mkdir(parents=True)
        (ws / ".git" / "config").write_text("[core]\n")
        tmp.mkdir()
        os.chmod(root, 0o755)
        for path in (ws, ws / ".git", ws / ".git" / "config", tmp):
            os.chown(path, 65534, 65534)
        policy = build_policy("workspace-write", ws, tmp)
        script = f"id -u; echo in > in.txt; echo x >> .git/config; echo out > {root}/out; exec 3<>/dev/tcp/1.1.1.1/80"
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", system_python, "-I", "-S"]
        done = subprocess.run(
            [*drop, str(LAUNCHER), policy.to_json(), "1", "--", "bash", "-c", script],
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.stdout.split()[0] == "65534", done.stderr
        assert (ws / "in.txt").exists() and not (root / "out").exists()
        assert (ws / ".git" / "config").read_text() == "[core]\n"
        assert "Read-only file system" in done.stderr and "Permission denied" in done.stderr
        assert done.returncode != 0  # no network
    finally:
        shutil.rmtree(root, ignore_errors=True)
