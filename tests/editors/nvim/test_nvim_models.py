"""Per-session models in the Neovim plugin, in a real headless Neovim against the real server and the model double:
``:ThreadlineModel`` offers listModels' models through vim.ui.select and switches the session with updateSession,
from its next model call; before any session, the pick is the next session's model."""

from __future__ import annotations

from pathlib import Path

from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)

CONFIG = """
[models.small]
model = "small-chat"
context_window_tokens = 9000
price = { input = 1.0, output = 2.0 }

[models.big]
model = "deepseek-chat"
context_window_tokens = 64000
"""


def write_config(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text(CONFIG)


def test_ThreadlineModel_picks_from_listModels_and_the_next_call_uses_it(nvim, provider: Provider, tmp_path):
    write_config(tmp_path)
    provider.push({"content": "Small."}, {"content": "Big."})
    out = nvim("""
      T.stub_select(function(items) return items[2] end) -- "small" (the default comes first)
      vim.cmd('ThreadlineModel')
      T.wait('the pick', function() return #T.selects == 1 end)
      vim.wait(200)
      T.open()
      T.turn('one')
      local first = T.tl.status().context.size
      T.stub_select(function(items) return items[3] end) -- "big"
      vim.cmd('ThreadlineModel')
      T.wait('the switch', function() return T.tl.status().context.size == 64000 end)
      T.turn('two')
      return { labels = T.selects[1].labels, kind = T.selects[1].kind, first = first,
               size = T.tl.status().context.size, model = T.tl.current().model }
    """)
    r, chat = out["result"], "\n".join(out["chat"])
    assert r["kind"] == "threadline_model"
    assert r["labels"][0].startswith("default  openai · fake-model · ")
    assert r["labels"][1] == "small  openai · small-chat · 9k window · $1.00 in · $2.00 out per M tokens"
    assert r["labels"][2].startswith("big  openai · deepseek-chat · 64k window · $0.")
    assert r["first"] == 9000 and r["size"] == 64000 and r["model"] == "big"
    assert [q["body"]["model"] for q in provider.requests() if q["path"].startswith("/v1/chat")] == [
        "small-chat",
        "deepseek-chat",
    ]
    assert "── model: big (64k window), from the next model call" in chat


def test_ThreadlineModel_with_a_name_and_default_skips_the_picker(nvim, provider: Provider, tmp_path):
    write_config(tmp_path)
    provider.push({"content": "Default."})
    out = nvim("""
      T.open()
      T.stub_select(function() error('no picker expected') end)
      local done
      require('threadline.models').pick('small', function(err, r) done = err or r end)
      T.wait('small', function() return done end)
      local small = done
      done = nil
      vim.cmd('ThreadlineModel default')
      T.wait('default', function() return T.tl.current().model == nil and T.tl.status().context.size == 64000 end)
      T.turn('hi')
      local bad
      require('threadline.models').pick('nope', function(err) bad = err end)
      T.wait('the error', function() return bad end)
      return { small = small.contextWindowTokens, selects = #T.selects, bad = bad.data and bad.data.code }
    """)
    r = out["result"]
    assert r["small"] == 9000 and r["selects"] == 0 and r["bad"] == "ModelNotFound"
    assert [q["body"]["model"] for q in provider.requests() if q["path"].startswith("/v1/chat")] == ["fake-model"]
