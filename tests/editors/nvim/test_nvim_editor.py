"""Editor grounding in the Neovim plugin, in a real headless Neovim with a real language server from
PyPI (python-lsp-server with pyflakes, test extras) attached to the Python buffers: the error an agent's edit
introduced reaches the model's next request, ``find_definition`` is answered by the language server, and a
selection (``:ThreadlineAddSelection``) and an ``@path`` go with the message."""

from __future__ import annotations

import json

from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)
from tests.harness import REPO

PYLSP = REPO / ".venv" / "bin" / "pylsp"
SETUP = """
  local settings = { pylsp = { plugins = { pycodestyle = { enabled = false }, mccabe = { enabled = false },
    pyflakes = { enabled = true } } } }
  local function start()
    vim.lsp.start({ name = 'pylsp', cmd = { %s }, root_dir = T.workdir, settings = settings })
  end
  vim.api.nvim_create_autocmd('FileType', { pattern = 'python', callback = start })
  T.tl.setup(vim.tbl_deep_extend('force', require('threadline.config').options, { editor = { settle_ms = 8000 } }))
  vim.cmd.edit(T.workdir .. '/lib.py')
  vim.cmd.edit(T.workdir .. '/main.py')
  T.wait('pylsp to attach', function() return #vim.lsp.get_clients({ name = 'pylsp' }) > 0 end, 60000)
"""


def files(workdir) -> None:
    (workdir / "lib.py").write_text("def helper(x):\n    return x\n\n\nVALUE = 1\n")
    (workdir / "main.py").write_text("from lib import helper\n\nprint(helper(1))\n")


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "tool"]


def test_issue34_nvim_the_edits_error_from_pyflakes_reaches_the_model_and_pylsp_answers_find_definition(
    nvim, provider: Provider, workdir
):
    files(workdir)
    provider.push(
        {
            "tool_calls": [
                {
                    "id": "call_e",
                    "name": "edit_file",
                    "arguments": {"path": "main.py", "old_string": "helper(1)", "new_string": "helperr(1)"},
                }
            ]
        },
        {
            "tool_calls": [
                {"id": "call_d", "name": "find_definition", "arguments": {"path": "main.py", "line": 1, "column": 18}}
            ]
        },
        {"content": "Found it."},
    )
    out = nvim(
        SETUP % json.dumps(str(PYLSP))
        + """
      T.open()
      T.turn('rename the call')
      return {}
    """,
        timeout=180,
        TL_POLICY="autoEdit",
    )
    requests = provider.requests()
    edit = tool_results(requests[1])[0]
    # the import the renamed call no longer uses is new too; errors come first
    assert edit.split("\n\n", 1)[1].splitlines() == [
        "Editor diagnostics introduced by this edit (1 error, 1 warning):",
        "main.py:3:7 error: undefined name 'helperr' [pyflakes]",
        "    print(helperr(1))",
        "main.py:1:1 warning: 'lib.helper' imported but unused [pyflakes]",
        "    from lib import helper",
    ], edit
    definition = tool_results(requests[2])[1]
    assert definition == "1 definition:\nlib.py:1:5\n    def helper(x):", definition
    assert "Found it." in "\n".join(out["chat"])


def test_issue34_nvim_a_selection_and_an_at_mention_go_with_the_message_and_at_completes_files(
    nvim, provider: Provider, workdir
):
    files(workdir)
    provider.push({"content": "Seen."})
    out = nvim("""
      T.open()
      vim.cmd.edit(T.workdir .. '/lib.py')
      vim.cmd('1,2ThreadlineAddSelection')
      local words = require('threadline.editor').complete(0, 'li')
      T.turn('explain this, see @main.py')
      return { words = words, pending = #require('threadline.editor').pending }
    """)
    assert out["result"]["words"] == ["lib.py"] and out["result"]["pending"] == 0
    user = [m for m in provider.requests()[0]["body"]["messages"] if m["role"] == "user"][-1]["content"]
    assert user.startswith("explain this, see @main.py\n\n")
    assert '<context kind="selection" path="lib.py" lines="1-2">\ndef helper(x):\n    return x\n</context>' in user
    assert '<context kind="file" path="main.py">\nfrom lib import helper\n' in user
