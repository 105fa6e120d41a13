"""The plugin's view of ``seq`` (B-DAEMON-1, docs/DAEMON.md), in a real headless Neovim: an update whose number it
has shown is dropped, but a new server numbers afresh, so nothing of a restarted server is dropped; switching away
from a session followed with ``:ThreadlineAttach`` detaches it, and ``:ThreadlineAttach SESSION`` follows it again
from the last update shown, showing nothing twice.
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


def test_a_restarted_servers_updates_are_not_taken_for_ones_already_shown(nvim, provider: Provider):
    provider.push({"content": "first reply"}, {"content": "second reply"})
    out = nvim("""
      T.open()
      T.turn('one')
      T.tl.stop(true) -- a new server numbers its updates from 1 again
      T.turn('two')
      return { second = T.find('second reply') ~= nil }
    """)
    assert out["result"]["second"], "\n".join(out["chat"])


@pytest.fixture
def daemon_home(home: Path) -> Iterator[Path]:
    yield home
    stop_daemon(home)


def test_B_DAEMON_1_switching_away_detaches_and_attaching_again_shows_nothing_twice(
    nvim, provider: Provider, workdir: Path, daemon_home: Path
):
    provider.push({"content": "all written"})
    env = server_env(daemon_home, provider.url, THREADLINE_MODEL="fake-model", THREADLINE_API_KEY="test-key")
    detached = subprocess.run(
        [str(SERVER), "exec", "--detach", "--cwd", str(workdir), "write it"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert detached.returncode == 0, detached.stderr
    sid = detached.stdout.strip()
    for _ in range(600):  # bounded: until the detached turn has ended
        shown = subprocess.run([str(SERVER), "sessions"], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
        line = next((line for line in shown.stdout.splitlines() if line.startswith(sid)), "")
        if line and " running " not in line and " waiting " not in line:
            break
        time.sleep(0.2)
    out = nvim(
        f"""
      T.tl.setup({{ use_daemon = true, cmd_env = {{ THREADLINE_HOME = vim.env.TL_HOME,
        THREADLINE_BASE_URL = vim.env.TL_PROVIDER_URL, THREADLINE_MODEL = 'fake-model', THREADLINE_API_KEY = 'test-key' }} }})
      local sid = {sid!r}
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
      vim.cmd('ThreadlineAttach ' .. sid)
      T.wait('the replay', function() return T.find('all written') ~= nil end)
      T.wait('the attach', function() return T.tl.current().attached end)
      local attached = clients()
      T.tl.open({{ cwd = T.workdir, new = true }}) -- another session: the attached one is detached
      T.wait('the other session', function() return T.tl.current().id ~= sid end)
      local after_switch = clients()
      vim.cmd('ThreadlineAttach ' .. sid)
      T.wait('the attach again', function() return T.tl.current().id == sid and T.tl.current().attached end)
      return {{ attached = attached, after_switch = after_switch, again = clients() }}
    """,
        timeout=180,
    )
    r, chat = out["result"], "\n".join(out["chat"])
    assert (r["attached"], r["after_switch"], r["again"]) == (1, 0, 1)
    assert chat.count("all written") == 1 and chat.count("write it") == 1, chat
