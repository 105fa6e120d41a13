"""The cost benchmark's "Threadline before" is read from git history, not copied into the tree.

With the commit at hand, ``bench.legacy`` imports ``server/context/`` as it was at b10667b; in a shallow clone (as CI
makes) it stops with a message that names the commit and ``git fetch --unshallow``, never an obscure traceback.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.harness import REPO


def _has_commit(repo, commit: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode == 0


def test_legacy_stages_come_from_the_commit_not_from_server_context():
    from bench.legacy import LEGACY_COMMIT, legacy_requests, load_legacy

    if not _has_commit(REPO, LEGACY_COMMIT):
        pytest.skip("this clone lacks b10667b (shallow); the next test covers that case")
    view = load_legacy("view")
    assert view.__spec__ is not None and view.__spec__.origin == "b10667b:server/context/view.py"
    assert view.__name__ == "bench_b10667b.view"  # its own package: the server's pipeline is not touched
    transcript = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
    ]
    assert list(legacy_requests(transcript, [(1, 2)], 16_000)) == [transcript[:2]]


def test_a_shallow_clone_is_told_how_to_fetch_the_commit(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{REPO}", str(clone)], check=True)
    probe = "from bench.legacy import legacy_requests\nnext(legacy_requests([], [(1, 0)], 1000))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=clone, capture_output=True, text=True)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("bench.legacy.LegacyUnavailable: ")
    assert "b10667ba716c169a83d1697b50d6c0077bcfe965" in last and "git fetch --unshallow" in last
