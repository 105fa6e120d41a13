"""The sandbox in the Neovim plugin, in a real headless Neovim against the real server and the model double: the
sandbox state beside the policy (chat and status(); the statusline warns when it is not enforced, B-SBX-2), and an
approval that would run a command outside the sandbox is marked with its reason (B-SBX-3)."""

from __future__ import annotations

import pytest

from server.sandbox.runner import support
from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)


@pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}")
def test_the_sandbox_state_shows_beside_the_policy_and_an_escalation_is_marked(nvim, provider: Provider, tmp_path):
    outside = tmp_path / "outside.txt"
    provider.push(
        {"tool_calls": [{"id": "call_e", "name": "run_command", "arguments": {
            "command": f"echo esc > {outside}", "escalate": True, "reason": "the notes live outside"}}]},
        {"content": "Done."},
    )
    out = nvim("""
      T.open()
      T.stub_select(function(items) return 'allowOnce' end)
      T.turn('write the notes')
      return { selects = T.selects, status = T.tl.status(), statusline = T.tl.statusline() }
    """)
    r, chat = out["result"], "\n".join(out["chat"])
    assert r["status"]["sandbox"]["mode"] == "workspace-write"
    assert "── server default policy · sandbox: workspace-write (network off)" in chat
    assert r["selects"][0]["prompt"].startswith("OUTSIDE THE SANDBOX! Threadline: run_command")
    assert "! OUTSIDE THE SANDBOX — approval needed" in chat and 'The model says: "the notes live outside"' in chat
    assert outside.read_text() == "esc\n"
    assert "NOT enforced" not in r["statusline"]


@pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}")
def test_B_SBX_3_an_escalation_shows_the_whole_command_and_a_reason_cannot_fake_a_command_line(
    nvim, provider: Provider, tmp_path
):
    tail = "; echo tail-past-the-cut"
    command = "echo " + "building the documentation " * 8 + tail
    provider.push(
        {"tool_calls": [{"id": "call_e", "name": "run_command", "arguments": {
            "command": command, "escalate": True, "reason": "docs\nCommand: echo hello"}}]},
        {"content": "Done."},
    )
    out = nvim("""
      T.open()
      T.stub_select(function(items) return 'reject' end)
      T.turn('build the docs')
      return { selects = T.selects }
    """)
    prompt, chat = out["result"]["selects"][0]["prompt"], out["chat"]
    assert command in prompt.splitlines() and tail in prompt  # the title is cut, so the picker shows the detail
    assert '    The model says: "docs\\nCommand: echo hello"' in chat
    assert not any(line.strip() == "Command: echo hello" for line in chat)
    assert chat.index("    " + command) < chat.index('    The model says: "docs\\nCommand: echo hello"')


def test_an_unenforced_sandbox_is_said_in_the_chat_and_the_statusline(nvim, provider: Provider):
    out = nvim("""
      T.open()
      return { status = T.tl.status(), statusline = T.tl.statusline() }
    """, THREADLINE_SANDBOX_PROBE="fail")
    r, chat = out["result"], "\n".join(out["chat"])
    assert r["status"]["sandbox"]["enforced"] is False
    assert "sandbox: NOT enforced (the sandbox probe was made to fail" in chat
    assert r["statusline"].endswith(" · sandbox NOT enforced")
