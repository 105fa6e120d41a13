#!/usr/bin/env python3
"""PreToolUse hook: deny ``rm -r``/``rm -f`` of anything outside the session folder.

    [[hooks.PreToolUse]]
    matcher = "run_command"
    command = "python3 /path/to/block_rm_outside.py"
"""

import json
import os
import shlex
import sys

event = json.load(sys.stdin)
command = str(event.get("tool_input", {}).get("command", ""))
root = os.path.realpath(event["cwd"])
try:
    words = shlex.split(command.replace(";", " ; ").replace("&&", " && ").replace("|", " | "))
except ValueError:
    words = command.split()
for i, word in enumerate(words):
    if os.path.basename(word) != "rm":
        continue
    args = []
    for arg in words[i + 1 :]:
        if arg in (";", "&&", "|", "||"):
            break
        args.append(arg)
    if not any(a.startswith("-") and ("r" in a.lower() or "f" in a) for a in args):
        continue
    for target in (a for a in args if not a.startswith("-")):
        path = os.path.realpath(os.path.join(root, os.path.expanduser(target)))
        if path != root and not path.startswith(root + os.sep):
            print(json.dumps({"decision": "deny", "reason": f"rm outside the session folder: {target}"}))
            sys.exit(0)
        if path == root:
            print(json.dumps({"decision": "deny", "reason": "rm of the whole session folder"}))
            sys.exit(0)
