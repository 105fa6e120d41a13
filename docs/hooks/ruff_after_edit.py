#!/usr/bin/env python3
"""PostToolUse hook: after an edit of a Python file, run ``ruff check`` on it and show the model what it says.

    [[hooks.PostToolUse]]
    matcher = "edit_file|write_file"
    command = "python3 /path/to/ruff_after_edit.py"
"""

import json
import subprocess
import sys

event = json.load(sys.stdin)
path = str(event.get("tool_input", {}).get("path", ""))
if not path.endswith(".py") or event.get("tool_response", {}).get("status") != "ok":
    sys.exit(0)
ruff = [sys.executable, "-m", "ruff"]
done = subprocess.run([*ruff, "check", "--no-cache", "--quiet", path], capture_output=True, text=True)
if done.returncode != 0:
    findings = (done.stdout + done.stderr).strip()
    print(json.dumps({"additionalContext": f"ruff check {path}:\n{findings}"}))
