#!/usr/bin/env python3
"""PreToolUse hook: append every tool call to an audit log outside the session folder (``~/threadline-audit.log``,
or the path given as its argument). It answers nothing: exit 0 lets the call go on.

The log is outside the folder, which the sandbox does not let a hook write (B-HOOK-2), so this hook needs
``sandbox = false``; without it the write is refused, the hook fails, and a failing ``PreToolUse`` hook blocks
the call, saying it ran in the sandbox, quoting the ``PermissionError`` and naming this fix:

    [[hooks.PreToolUse]]
    command = "python3 /path/to/audit_log.py"
    sandbox = false
"""

import json
import os
import sys
import time

event = json.load(sys.stdin)
path = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/threadline-audit.log")
line = {
    "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    "session": event.get("session_id"),
    "tool": event.get("tool_name"),
    "input": event.get("tool_input"),
}
with open(path, "a", encoding="utf-8") as log:
    log.write(json.dumps(line) + "\n")
