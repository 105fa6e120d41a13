"""B-WT-1 from the terminal: ``threadline exec --worktree NAME`` (in its process, and ``--detach`` into the daemon),
``threadline chat --worktree NAME``, ``threadline sessions`` with the branch and diff stat, and ``threadline
worktrees merge|discard SESSION``; real git, real processes, the model double."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.cli_support import command_env, threadline
from tests.e2e.daemon_support import bridge, fake_fixture, listed, open_home_fixture, wait_until
from tests.worktrees.support import COMMIT, checkout_state, command, git, make_repo

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]
open_home = open_home_fixture()
fake = fake_fixture()


def commit_work(name: str) -> dict:
    return command("c0", f"echo {name} > {name}.txt && git add -A && {COMMIT} -m '{name} work'")


async def test_B_WT_1_exec_worktree_then_sessions_shows_it_and_worktrees_merge_brings_it_in(open_home, fake, tmp_path):
    env = command_env(fake, open_home)
    repo = make_repo(tmp_path)
    before = checkout_state(repo)
    fake.push(commit_work("fix"), {"content": "committed"})
    run = await asyncio.to_thread(
        threadline, env, "exec", "--cwd", str(repo), "--worktree", "fix", "--policy", "auto",
        "--output-format", "stream-json", "fix it",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    init = json.loads(run.stdout.splitlines()[0])
    assert init["worktree"]["branch"] == "threadline/fix" and init["cwd"] == init["worktree"]["path"]
    assert not Path(init["cwd"]).is_relative_to(repo)
    assert checkout_state(repo) == before
    assert git(repo, "log", "-1", "--format=%s", "threadline/fix").strip() == "fix work"
    shown = await asyncio.to_thread(threadline, env, "sessions")
    line = next(line for line in shown.stdout.splitlines() if line.startswith(init["sessionId"]))
    assert "[threadline/fix 1 files +1 -0, 1 ahead of main]" in line, shown.stdout
    merged = await asyncio.to_thread(threadline, env, "worktrees", "merge", init["sessionId"])
    assert merged.returncode == 0 and merged.stdout.startswith("merged"), merged.stderr
    assert (repo / "fix.txt").read_text() == "fix\n"
    fake.push({"content": "nothing to do"})
    text = await asyncio.to_thread(threadline, env, "exec", "--cwd", str(repo), "--worktree", "said", "look")
    assert text.returncode == 0 and "worktree on branch threadline/said from main" in text.stderr, text.stderr
    again = await asyncio.to_thread(threadline, env, "exec", "--cwd", str(repo), "--worktree", "fix", "x")
    assert again.returncode == 2 and "exists" in again.stderr and "Traceback" not in again.stderr


async def test_B_WT_1_exec_detach_worktree_runs_in_the_daemon_and_worktrees_discard_removes_it(
    open_home, fake, tmp_path
):
    env = command_env(fake, open_home)
    repo = make_repo(tmp_path)
    fake.push(commit_work("bg"), {"content": "done in the background"})
    detached = await asyncio.to_thread(
        threadline, env, "exec", "--detach", "--cwd", str(repo), "--worktree", "bg", "--policy", "auto", "work"
    )
    assert detached.returncode == 0, detached.stderr
    sid = detached.stdout.strip()
    client = await bridge(env, open_home)
    try:

        async def finished() -> dict | None:
            found = await listed(client, sid)
            return found if not found["running"] and found["worktree"]["ahead"] == 1 else None

        info = (await wait_until(finished, 120, "the detached turn's commit"))["worktree"]
    finally:
        await client.close()
    assert info["branch"] == "threadline/bg" and info["filesChanged"] == 1
    gone = await asyncio.to_thread(threadline, env, "worktrees", "discard", sid, "--delete-branch")
    assert gone.returncode == 0 and gone.stdout.strip() == "discarded", gone.stderr
    assert not Path(info["path"]).exists() and "threadline/bg" not in git(repo, "branch", "--list")
    shown = await asyncio.to_thread(threadline, env, "sessions")
    assert "discarded]" in next(line for line in shown.stdout.splitlines() if line.startswith(sid))


async def test_B_WT_1_chat_worktree_works_in_the_new_worktree(open_home, fake, tmp_path):
    env = command_env(fake, open_home)
    repo = make_repo(tmp_path)
    fake.push(command("c0", "pwd && git status --short --branch"), {"content": "looked"})
    run = await asyncio.to_thread(
        threadline, env, "chat", "--cwd", str(repo), "--worktree", "talk", "--policy", "auto", stdin="where am I?\n"
    )
    assert run.returncode == 0, run.stderr
    assert "looked" in run.stdout
    assert "threadline/talk" in git(repo, "worktree", "list") or "talk" in git(repo, "worktree", "list")
    assert str(open_home / "worktrees") in run.stdout + run.stderr  # the command ran in the worktree
    bad = await asyncio.to_thread(threadline, env, "chat", "--worktree", "x", "--continue", stdin="")
    assert bad.returncode == 2 and "--worktree" in bad.stderr, bad.stderr
