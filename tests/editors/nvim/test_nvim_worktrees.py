"""Worktree sessions in the Neovim plugin (B-WT-1, docs/WORKTREES.md), in a real headless Neovim against the real
server, real git and the model double: ``:ThreadlineWorktree NAME`` opens a session in its own worktree, the agent
commits there, ``:ThreadlineWorktrees`` lists it with branch, state and diff stat, its diff opens, and it merges."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)
from tests.worktrees.support import COMMIT, IDENT


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout


def test_B_WT_1_a_worktree_session_is_listed_its_diff_opens_and_it_merges(nvim, provider: Provider, workdir: Path):
    _git(workdir, "init", "-q", "-b", "main")
    _git(workdir, "add", ".")
    _git(workdir, *IDENT, "commit", "-qm", "start")
    work = f"echo 'from the agent' >> a.txt && {COMMIT} -am agent"
    provider.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": work}}]},
        {"content": "Committed."},
    )
    out = nvim(
        """
      local wt = require('threadline.worktrees')
      local opened
      wt.open('nv', function(err, id) opened = id or err end)
      T.wait('the worktree session', function() return opened ~= nil and T.tl.status().state == 'idle' end)
      T.turn('commit something')
      local items, listed
      wt.list(function(err, found, buf) items = found or err; listed = buf end)
      T.wait('the list', function() return items ~= nil end)
      local lines = vim.api.nvim_buf_get_lines(listed, 0, -1, false)
      local diff
      wt.diff(items[1].sessionId, function(err, buf) diff = buf or err end)
      T.wait('the diff', function() return diff ~= nil end)
      local diff_lines = vim.api.nvim_buf_get_lines(diff, 0, -1, false)
      local merged
      wt.merge(items[1].sessionId, nil, function(err, r) merged = r or err end)
      T.wait('the merge', function() return merged ~= nil end)
      return { lines = lines, diff = diff_lines, merged = merged, filetype = vim.bo[diff].filetype }
    """,
        TL_POLICY="auto",
    )
    r = out["result"]
    assert len(r["lines"]) == 1 and "threadline/nv  active  1 files +1 -0  1 ahead of main" in r["lines"][0], r
    assert r["filetype"] == "diff" and "+from the agent" in r["diff"], r["diff"]
    assert r["merged"]["merged"] is True, r["merged"]
    assert (workdir / "a.txt").read_text().endswith("from the agent\n")
    assert _git(workdir, "log", "-1", "--format=%s").strip() == "agent"
