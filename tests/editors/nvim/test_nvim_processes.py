"""Background processes in the Neovim plugin, in a real headless Neovim against the real server and the model double:
``:ThreadlineProcesses`` lists the session's background processes through vim.ui.select and stops the one
picked (stopProcess)."""

from __future__ import annotations

from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)


def test_ThreadlineProcesses_lists_the_background_processes_and_stops_the_one_picked(nvim, provider: Provider):
    provider.push(
        {"tool_calls": [{"id": "call_b", "name": "run_command", "arguments": {"command": "sleep 600", "background": True}}]},
        {"content": "Started."},
    )
    out = nvim("""
      T.open()
      T.stub_select(function(items, opts)
        if opts.kind == 'threadline_process' then return items[1] end
        return 'allowOnce'
      end)
      T.turn('start it')
      local stopped
      require('threadline.processes').pick(function(err, p) stopped = p or err end)
      T.wait('the stop', function() return stopped ~= nil end)
      local picks = vim.tbl_filter(function(s) return s.kind == 'threadline_process' end, T.selects)
      return { labels = picks[1].labels, status = stopped.status }
    """)
    r = out["result"]
    assert len(r["labels"]) == 1 and r["labels"][0].startswith("bg-"), r["labels"]
    assert "running, pid " in r["labels"][0] and r["labels"][0].endswith("sleep 600")
    assert r["status"] == "stopped"
