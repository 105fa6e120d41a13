"""``threadline chat``'s approval prompt shows the whole request with control characters made visible (once,
escape sequences were printed raw and long commands cut at 160 characters, so a payload could hide)."""

from __future__ import annotations

import io

from server.cli.chat import Printer, ask_approval


async def test_the_approval_prompt_shows_the_whole_command_and_no_raw_escape_sequences():
    hidden = "rm -rf ~/important"
    command = "echo harmless" + " " * 300 + "\x1b[2K\x1b[1A\r" + hidden  # clear the line, move up: hide the tail
    out = io.StringIO()
    decision = await ask_approval(
        Printer(out), {"tool": "run_command", "title": "Run: echo harmless\x1b[8m", "detail": command}
    )
    shown = out.getvalue()
    assert "\x1b" not in shown and "\r" not in shown
    assert hidden in shown and "\\x1b[2K" in shown  # the payload is visible, the escapes are shown as text
    assert decision == {"decision": "reject"}  # pytest's stdin is not a terminal: rejected, as the prompt says
