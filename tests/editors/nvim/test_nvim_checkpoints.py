"""Checkpoints, steering and queueing in the Neovim plugin, in a real headless Neovim against the real server and the model double:
edits reviewed in a diff tab, rewinding from a turn's menu (files, or files and conversation), steer and queue
while a turn runs, compact now, and an applied edit's diff with its one-key rewind."""

from __future__ import annotations

from pathlib import Path

from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)

EDIT = {
    "tool_calls": [
        {
            "id": "call_e",
            "name": "edit_file",
            "arguments": {"path": "a.txt", "old_string": "hello", "new_string": "bonjour"},
        }
    ]
}


def test_edit_reviewed_in_a_diff_tab_then_rewound_from_the_turn_menu(nvim, provider: Provider, workdir: Path):
    provider.push(EDIT, {"content": "Changed."})
    out = nvim("""
      T.open()
      local approvals = {}
      vim.ui.select = function(items, opts, on_choice) -- a picker nobody answers: the diff tab's keys do
        table.insert(approvals, { kind = opts.kind, items = items })
      end
      T.tl.submit('French please')
      T.wait('the diff tab', function() return #vim.api.nvim_list_tabpages() == 2 end)
      local sides = {}
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        local b = vim.api.nvim_win_get_buf(w)
        table.insert(sides, { name = vim.api.nvim_buf_get_name(b), diff = vim.wo[w].diff,
                              text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n') })
      end
      vim.api.nvim_feedkeys('ga', 'x', false)
      T.wait('the turn to end', function() return T.find('Changed.') and T.tl.status().state == 'idle' end)
      local tabs = #vim.api.nvim_list_tabpages()
      local edited = io.open(T.workdir .. '/a.txt'):read('*a')
      -- The turn's menu: gR on its message in the chat buffer.
      T.stub_select(function(items) return items[1] end)
      local s = T.tl.current()
      vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.chat.buf)[1])
      vim.api.nvim_win_set_cursor(0, { T.find('French please'), 0 })
      vim.api.nvim_feedkeys('gR', 'x', false)
      T.wait('the rewind', function() return T.find('files rewound') end)
      return { sides = sides, tabs = tabs, edited = edited, approvals = approvals, selects = T.selects }
    """)
    r = out["result"]
    assert [s["diff"] for s in r["sides"]] == [True, True]
    assert sorted(s["text"] for s in r["sides"]) == ["bonjour from a.txt\nsecond line", "hello from a.txt\nsecond line"]
    assert any("(before)" in s["name"] for s in r["sides"]) and any("proposed" in s["name"] for s in r["sides"])
    assert r["approvals"][0]["kind"] == "threadline_approval" and r["tabs"] == 1, "answered in the diff; tab closed"
    assert r["edited"] == "bonjour from a.txt\nsecond line\n"
    [rewind] = r["selects"]
    assert rewind["kind"] == "threadline_rewind" and rewind["items"] == ["files", "conversation"]
    assert "a.txt: restore" in rewind["prompt"] and "run_command" in rewind["prompt"]
    assert (workdir / "a.txt").read_text() == "hello from a.txt\nsecond line\n"
    assert "  a.txt: restore" in "\n".join(out["chat"])


def test_rewind_files_and_conversation_forks_before_the_turn(nvim, provider: Provider, workdir: Path):
    provider.push(
        {"content": "First."},
        {"tool_calls": [{"id": "call_w", "name": "write_file", "arguments": {"path": "new.txt", "content": "x\\n"}}]},
        {"content": "Wrote it."},
    )
    out = nvim(
        """
      local first = T.open()
      T.turn('one')
      T.turn('make new.txt')
      local made = vim.uv.fs_stat(T.workdir .. '/new.txt') ~= nil
      local turns = T.tl.current().chat.turns
      T.stub_select(function(items) return 'conversation' end)
      T.tl.rewind({ turn_id = turns[#turns].turn_id })
      T.wait('the fork', function() return T.tl.status().session_id ~= first end)
      T.wait('its history', function() return T.find('resumed') end)
      return { first = first, made = made, turns = #turns }
    """,
        TL_POLICY="auto",
    )
    r, chat = out["result"], "\n".join(out["chat"])
    assert r["made"] and r["turns"] == 2
    assert not (workdir / "new.txt").exists()
    assert out["status"]["session_id"] != r["first"]
    assert "one" in chat and "First." in chat and "make new.txt" not in chat, chat


def test_steer_and_queue_while_a_turn_runs_then_compact_now(nvim, provider: Provider):
    provider.push({"content": "working", "delay": 2}, {"content": "steered answer"}, {"content": "queued answer"})
    out = nvim("""
      T.open()
      local answers = { 'steer', 'queue' }
      T.stub_select(function() return table.remove(answers, 1) end)
      T.tl.submit('start')
      T.wait('the turn', function() return T.tl.status().state == 'running' end)
      vim.wait(700) -- the first model call is under way
      T.tl.submit('shorter please')
      T.wait('the steer', function() return #T.selects == 1 and T.find('steered into') end)
      T.tl.submit('then this')
      T.wait('the queued turn', function() return T.find('queued answer') and T.tl.status().state == 'idle' end)
      local compacted
      T.tl.compact('keep the plan', function(err, r) compacted = err or r end)
      T.wait('compact', function() return compacted end)
      return { kinds = vim.tbl_map(function(s) return s.kind end, T.selects), compacted = compacted,
               compacting = T.tl.status().compacting }
    """)
    r, chat = out["result"], "\n".join(out["chat"])
    assert r["kinds"] == ["threadline_busy", "threadline_busy"]
    assert isinstance(r["compacted"].get("compacted"), bool), r["compacted"]
    assert r.get("compacting") is None, "the compaction is over once compactSession answered"
    chats = [q for q in provider.requests() if q["path"].startswith("/v1/chat")]
    assert chats[1]["body"]["messages"][-1] == {"role": "user", "content": "shorter please"}
    assert chats[2]["body"]["messages"][-1] == {"role": "user", "content": "then this"}
    assert chat.index("working") < chat.index("steered answer") < chat.index("queued answer")
    assert "## You (steered into the running turn)\nshorter please" in chat


def test_autoEdit_diff_after_the_fact_and_its_one_key_rewind(nvim, provider: Provider, workdir: Path):
    provider.push(EDIT, {"content": "Changed."})
    out = nvim(
        """
      T.open()
      T.turn('French')
      vim.cmd('ThreadlineDiff')
      local names = {}
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        table.insert(names, vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)))
      end
      T.stub_select(function(items) return items[1] end)
      vim.api.nvim_feedkeys('gR', 'x', false)
      T.wait('the rewind', function() return T.find('files rewound') end)
      return { names = names, selects = T.selects }
    """,
        TL_POLICY="autoEdit",
    )
    r, chat = out["result"], "\n".join(out["chat"])
    assert ":ThreadlineDiff call_e" in chat
    assert any("applied" in n for n in r["names"]) and len(r["names"]) == 2
    assert r["selects"][0]["items"] == ["files"], "one edit: no conversation rewind"
    assert (workdir / "a.txt").read_text() == "hello from a.txt\nsecond line\n"


def test_edit_rejected_with_the_diff_tabs_key_leaves_the_file_unchanged(nvim, provider: Provider, workdir: Path):
    provider.push(EDIT, {"content": "Left alone."})
    out = nvim("""
      T.open()
      vim.ui.select = function() end -- a picker nobody answers: the diff tab's keys do
      T.tl.submit('French please')
      T.wait('the diff tab', function() return #vim.api.nvim_list_tabpages() == 2 end)
      local diffed = {}
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do table.insert(diffed, vim.wo[w].diff) end
      local before = io.open(T.workdir .. '/a.txt'):read('*a')
      vim.api.nvim_feedkeys('gr', 'x', false)
      T.wait('the turn to end', function() return T.find('Left alone.') and T.tl.status().state == 'idle' end)
      return { diffed = diffed, before = before, tabs = #vim.api.nvim_list_tabpages() }
    """)
    r, chat = out["result"], "\n".join(out["chat"])
    assert r["diffed"] == [True, True] and r["tabs"] == 1, "answered in the diff; tab closed"
    assert r["before"] == "hello from a.txt\nsecond line\n"
    assert (workdir / "a.txt").read_text() == "hello from a.txt\nsecond line\n", "rejected: nothing written"
    assert "denied" in chat and ":ThreadlineDiff" not in chat, chat


def test_applied_diff_of_a_resumed_session_after_a_restart_and_its_rewind(nvim, provider: Provider, workdir: Path):
    """A new Neovim (so a new server) resumes the session: the stored fileDiff gives the tool result its
    :ThreadlineDiff line, the diff tab shows old | new, and gR there rewinds the edit on disk."""
    provider.push(EDIT, {"content": "Changed."})
    first = nvim(
        """
      local id = T.open()
      T.turn('French')
      return { id = id }
    """,
        TL_POLICY="autoEdit",
    )
    sid = first["result"]["id"]
    assert (workdir / "a.txt").read_text() == "bonjour from a.txt\nsecond line\n"
    out = nvim(
        f"""
      T.tl.resume('{sid}', {{ cwd = T.workdir }})
      T.wait('the resumed session', function() return T.find('resumed:') ~= nil end)
      vim.cmd('ThreadlineDiff call_e')
      local sides = {{}}
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        local b = vim.api.nvim_win_get_buf(w)
        table.insert(sides, {{ diff = vim.wo[w].diff,
                               text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n') }})
      end
      T.stub_select(function(items) return items[1] end)
      vim.api.nvim_feedkeys('gR', 'x', false)
      T.wait('the rewind', function() return T.find('files rewound') end)
      return {{ sides = sides }}
    """,
        TL_POLICY="autoEdit",
    )
    r, chat = out["result"], "\n".join(out["chat"])
    assert ":ThreadlineDiff call_e" in chat, chat
    assert [s["diff"] for s in r["sides"]] == [True, True]
    assert sorted(s["text"] for s in r["sides"]) == ["bonjour from a.txt\nsecond line", "hello from a.txt\nsecond line"]
    assert (workdir / "a.txt").read_text() == "hello from a.txt\nsecond line\n"


def test_compact_now_with_nothing_to_compact_leaves_no_compacting_status(nvim, provider: Provider):
    """compactSession announces contextCompacting, then answers compacted: false: its answer ends the state."""
    out = nvim("""
      T.open()
      local answer
      T.tl.compact(nil, function(err, r) answer = err or r end)
      T.wait('compact', function() return answer end)
      return { answer = answer, compacting = T.tl.status().compacting, statusline = T.tl.statusline() }
    """)
    r = out["result"]
    assert r["answer"].get("compacted") is False, r
    assert r.get("compacting") is None and "compacting" not in r["statusline"], r
