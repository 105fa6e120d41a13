"""B-DAEMON-1 in the Neovim plugin, in a real headless Neovim: with ``use_daemon`` it runs ``threadline connect``;
``:ThreadlineAttach`` lists the daemon's sessions, attaches to one started by ``threadline exec --detach`` while
Neovim was not running, shows what happened before, asks the approval that waited, and streams the turn to its end.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.daemon_support import stop_daemon
from tests.editors.nvim.test_nvim_e2e import SERVER, Provider, nvim, provider, workdir  # noqa: F401  (fixtures)
from tests.harness import REPO, server_env


@pytest.fixture
def daemon_home(home: Path) -> Iterator[Path]:
    yield home
    stop_daemon(home)


def _threadline(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SERVER), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)


def test_B_DAEMON_1_ThreadlineAttach_shows_a_detached_turn_and_answers_its_waiting_approval(
    nvim, provider: Provider, workdir: Path, daemon_home: Path
):
    provider.push(
        {"tool_calls": [{"id": "call_w", "name": "write_file", "arguments": {"path": "out.txt", "content": "done\n"}}]},
        {"content": "all written"},
    )
    env = server_env(
        daemon_home,
        provider.url,
        THREADLINE_MODEL="fake-model",
        THREADLINE_API_KEY="test-key",
        THREADLINE_CONTEXT_WINDOW="64000",
    )
    detached = _threadline(env, "exec", "--detach", "--cwd", str(workdir), "write out.txt")
    assert detached.returncode == 0, detached.stderr
    sid = detached.stdout.strip()
    for _ in range(600):  # bounded: the approval waits with no client attached
        shown = _threadline(env, "sessions")
        if any(line.startswith(sid) and " waiting " in line for line in shown.stdout.splitlines()):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the session never waited for its approval:\n{shown.stdout}")

    out = nvim(
        f"""
      local sid = {sid!r}
      T.stub_select(function(items, opts)
        if opts.kind == 'threadline_attach' then
          for _, it in ipairs(items) do
            if it.sessionId == sid then return it end
          end
          return nil
        end
        return 'allowOnce'
      end)
      local attached
      require('threadline.attach').pick(function(err, id) attached = id or err end)
      T.wait('the attach', function() return attached ~= nil end)
      T.wait('the waiting approval', function()
        return #vim.tbl_filter(function(s) return s.kind == 'threadline_approval' end, T.selects) > 0
      end)
      T.wait('the turn to finish', function() return T.find('all written') ~= nil end, 60000)
      local picks = vim.tbl_filter(function(s) return s.kind == 'threadline_attach' end, T.selects)
      local s = T.tl.current()
      local function clients()
        local n
        T.tl.request('listSessions', {{ limit = 100 }}, function(_, r)
          for _, it in ipairs(r.sessions) do
            if it.sessionId == sid then n = it.attachedClients end
          end
        end)
        T.wait('listSessions', function() return n ~= nil end)
        return n
      end
      local while_attached = clients()
      T.open({{ new = true }}) -- switching to another session detaches this one
      T.wait('the detach', function() return T.tl._session(sid).detached end)
      local after_switch = clients()
      local seq_before = s.seq
      local again
      require('threadline.attach').attach(sid, {{}}, function(err, id) again = id or err end)
      T.wait('the re-attach', function() return again ~= nil end)
      return {{ attached = attached, labels = picks[1].labels, seq = seq_before, cmd = require('threadline.config').resolve_cmd(),
        while_attached = while_attached, after_switch = after_switch, again = again, after = clients(),
        current = T.tl.current().id }}
    """,
        timeout=180,
        TL_USE_DAEMON="1",
    )
    r, chat = out["result"], "\n".join(out["chat"])
    assert r["cmd"][-1] == "connect"
    assert r["attached"] == sid
    label = next(label for label in r["labels"] if "waiting for approval" in label)
    assert str(workdir) in label
    # what happened before Neovim attached, then the rest live, each once
    assert chat.index("write out.txt") < chat.index("write_file") < chat.index("all written"), chat
    assert chat.count("all written") == 1, chat
    assert isinstance(r["seq"], int) and r["seq"] > 0
    assert (r["while_attached"], r["after_switch"], r["after"]) == (1, 0, 1)
    # the re-attach asked for the updates after the last seen: nothing twice
    assert r["again"] == sid and r["current"] == sid
    assert chat.count("all written") == 1 and chat.count("## You") == 1, chat
    assert chat.rstrip().endswith("── attached: idle"), chat
    assert (workdir / "out.txt").read_text() == "done\n"
