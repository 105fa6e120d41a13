"""Plans and slash commands in the Neovim plugin, in a real headless Neovim against the real server and the model double: the
plan as a checklist in the chat buffer, `/` completion in the input buffer from listCommands (its
'completefunc' driven with the real <C-x><C-u> keys), a project command's expansion, a built-in's answer, and
:ThreadlineContext's breakdown and compactions."""

from __future__ import annotations

import re
from pathlib import Path

from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)

PLAN = [
    {"step": "Read the parser", "status": "completed"},
    {"step": "Fix the tokenizer", "status": "in_progress"},
    {"step": "Run the tests", "status": "pending"},
]


def test_plan_checklist_slash_completion_and_the_context_breakdown(nvim, provider: Provider, workdir: Path):
    commands = workdir / ".threadline" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review a file\nargument-hint: <path>\n---\nReview $ARGUMENTS\n")
    provider.push(
        {"tool_calls": [{"id": "p1", "name": "update_plan", "arguments": {"plan": PLAN}}]},
        {"content": "Planned."},
    )
    out = nvim("""
      T.open()
      local s = T.tl.current()
      T.wait('the commands', function() return s.commands and #s.commands > 0 end)
      -- the input buffer's completion, with the keys a user types
      local ibuf = s.input_buf
      local win = vim.fn.win_findbuf(ibuf)[1]
      vim.api.nvim_set_current_win(win)
      local seen
      vim.api.nvim_create_autocmd('CompleteChanged', { buffer = ibuf, callback = function()
        seen = vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({ 'items' }).items)
      end })
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('i/', true, false, true), 'xt', false)
      local direct = require('threadline.plans').complete_items(s, '/c')
      vim.cmd('stopinsert')
      T.turn('/review parser.py')
      T.wait('the plan', function() return T.find('── plan: ') ~= nil end)
      T.turn('/compact')
      local buf
      require('threadline.views').context(function(err, b) buf = b end)
      T.wait('the context view', function() return buf ~= nil end)
      return { seen = seen, direct = vim.tbl_map(function(i) return i.abbr .. ' | ' .. i.menu end, direct),
               context = vim.api.nvim_buf_get_lines(buf, 0, -1, false) }
    """)
    r, chat = out["result"], out["chat"]
    assert r["seen"] == ["/compact ", "/context ", "/plan ", "/review "], "typing / offers the commands"
    assert r["direct"] == [
        "/compact [focus] | Compact the conversation now, keeping an optional focus (builtin)",
        "/context | Show what fills the context window and the compactions so far (builtin)",
    ]
    sent = [q["body"]["messages"][-1] for q in provider.requests() if q["path"].startswith("/v1/chat")][0]
    assert sent == {"role": "user", "content": "Review parser.py"}
    assert chat.count("/review parser.py") == 1 and "Review parser.py" not in chat, "shown as typed, once"
    start = chat.index("── plan: 1 of 3 done · now: Fix the tokenizer")
    assert chat[start + 1 : start + 4] == ["  [x] Read the parser", "  [>] Fix the tokenizer", "  [ ] Run the tests"]
    assert any(line.startswith("[compact] Compacted: about") for line in chat), "the built-in's answer"
    ctx = r["context"]
    bar = next(line for line in ctx if line.startswith("breakdown: "))
    assert re.fullmatch(r"breakdown: \[S+T+U+M*p*\.+\]", bar) and len(bar) == len("breakdown: ") + 62, bar
    assert any(re.match(r"  T tool definitions +\d+ +\d+%", line) for line in ctx)
    assert "compactions: 1" in ctx and any(" manual summarized " in line for line in ctx)
    assert "  [>] Fix the tokenizer" in ctx
