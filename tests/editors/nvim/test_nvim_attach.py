"""Neovim follows a session the daemon runs (B-DAEMON-1, docs/DAEMON.md): ``threadline exec --detach`` starts a
turn that waits for an approval with no client, then a real headless Neovim with ``use_daemon`` picks it with
``:ThreadlineAttach``, sees what happened while it was away, answers the approval and watches the turn finish.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.daemon_support import open_home_fixture, write_call
from tests.editors.nvim.test_nvim_e2e import HERE, SERVER, Provider, _neovim
from tests.harness import REPO, server_env

open_home = open_home_fixture()


def test_B_DAEMON_1_neovim_attaches_and_answers_the_waiting_approval(open_home: Path, tmp_path: Path):
    home = open_home
    folder = tmp_path / "work"
    folder.mkdir()
    provider = Provider()
    try:
        provider.push(write_call("call_w", "report.txt", "ready\n"), {"content": "report written"})
        env = server_env(home, provider.url, THREADLINE_CONTEXT_WINDOW="64000")
        detached = subprocess.run(
            [str(SERVER), "exec", "--detach", "--cwd", str(folder), "write the report"],
            env=env,
            cwd=str(REPO),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert detached.returncode == 0, detached.stderr
        sid = detached.stdout.strip()
        assert sid.startswith("ses_"), detached.stdout

        body = f"""
          T.tl.setup({{ use_daemon = true, cmd_env = {{ THREADLINE_HOME = vim.env.TL_HOME }} }})
          assert(T.tl.status ~= nil)
          local sid = {json.dumps(sid)}
          local picked = false
          T.stub_select(function(items, opts)
            if opts.kind == 'threadline_approval' then
              return 'allowOnce'
            end
            for _, it in ipairs(items) do
              if it.sessionId == sid then
                picked = true
                return it
              end
            end
          end)
          local listed, seen = false, nil
          local function ask()
            T.tl.request('listSessions', {{ limit = 100 }}, function(err, r)
              seen = vim.inspect(err or r)
              for _, it in ipairs((r or {{}}).sessions or {{}}) do
                if it.sessionId == sid and it.waitingForApproval == true then
                  listed = true
                end
              end
              if not listed then
                vim.defer_fn(ask, 200)
              end
            end)
          end
          ask()
          local ok = vim.wait(60000, function() return listed end, 10)
          assert(ok, 'the session never listed as waiting: ' .. tostring(seen))
          vim.cmd('ThreadlineAttach')
          T.wait('the attach picker', function() return picked end, 60000)
          T.wait('the turn to finish', function() return T.chat_text():find('report written', 1, true) end, 90000)
          return {{ selects = T.selects, cmd = require('threadline.config').resolve_cmd() }}
        """
        script, result = tmp_path / "attach.lua", tmp_path / "result.json"
        script.write_text(
            f"local T = dofile({json.dumps(str(HERE / 'helpers.lua'))})\nT.run(function(T)\n{body}\nend)\n"
        )
        binary, runtime = _neovim()
        nvim_env = {k: v for k, v in env.items() if not k.startswith("NVIM")}
        nvim_env.update(
            VIMRUNTIME=str(runtime),
            TL_REPO=str(REPO),
            TL_WORKDIR=str(folder),
            TL_HOME=str(home),
            TL_PROVIDER_URL=provider.url,
            TL_RESULT=str(result),
            XDG_STATE_HOME=str(tmp_path / "state"),
            XDG_DATA_HOME=str(tmp_path / "data"),
            XDG_CONFIG_HOME=str(tmp_path / "config"),
            XDG_CACHE_HOME=str(tmp_path / "cache"),
        )
        proc = subprocess.run(
            [str(binary), "--headless", "--clean", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
            env=nvim_env,
            cwd=str(folder),
            timeout=240,
            capture_output=True,
            text=True,
        )
        assert result.exists(), f"nvim wrote no result (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        out = json.loads(result.read_text())
        chat = "\n".join(out["chat"])
        assert out["ok"], f"{out['error']}\n--- chat buffer ---\n{chat}"
        assert out["result"]["cmd"][-1] == "connect"
        kinds = [s["kind"] for s in out["result"]["selects"]]
        assert kinds == ["threadline_session", "threadline_approval"], out["result"]["selects"]
        assert "waiting for approval" in out["result"]["selects"][0]["labels"][0]
        assert "write the report" in chat  # the user message sent before Neovim was there
        assert "write_file" in chat and "report written" in chat
        assert (folder / "report.txt").read_text() == "ready\n"
    finally:
        provider.stop()
