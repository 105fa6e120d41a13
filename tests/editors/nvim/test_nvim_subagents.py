"""B-SUB-1 in the Neovim plugin, in a real headless Neovim against the real server and the model double: a
subagent's progress shows as an indented block under its parent's ``task`` call."""

from __future__ import annotations

from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)


def test_B_SUB_1_a_subagents_progress_is_an_indented_block_under_its_task_call(nvim, provider: Provider):
    provider.push(
        {
            "tool_calls": [
                {"id": "call_t", "name": "task", "arguments": {"description": "read", "prompt": "read a.txt"}}
            ]
        },
        {"tool_calls": [{"id": "call_r", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"content": "a.txt says hello"},
        {"content": "The subagent says hello."},
    )
    out = nvim("""
      T.open()
      T.turn('delegate')
      return {}
    """)
    chat = out["chat"]
    task = next(i for i, line in enumerate(chat) if line.startswith("  ⚙ task"))
    block = [line for line in chat[task:] if line.startswith("    ↳ [task 1]")]
    assert block == [
        "    ↳ [task 1] subagent started",
        "    ↳ [task 1] read_file: a.txt",
        "    ↳ [task 1] subagent finished: endTurn",
    ], chat
    assert "The subagent says hello." in "\n".join(chat)
