"""A real hook for the tests: records its stdin (one JSON line in ``.hooks-seen.jsonl`` of its cwd, with its
environment's keys), then does what its arguments say:

``ok`` | ``say JSON`` (print it) | ``exit2 REASON`` | ``crash`` | ``sleep SECONDS`` | ``garbage`` |
``block-stop-unless FILE`` (answer ``block`` to Stop until FILE exists in the cwd).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> int:
    payload = json.loads(sys.stdin.read() or "{}")
    with open(".hooks-seen.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps({"input": payload, "argv": sys.argv[1:], "env": dict(os.environ)}) + "\n")
    action, arg = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    if action == "say":
        print(arg)
    elif action == "exit2":
        print(arg, file=sys.stderr)
        return 2
    elif action == "crash":
        raise RuntimeError("the hook crashed")
    elif action == "sleep":
        time.sleep(float(arg))
    elif action == "garbage":
        print("this is not JSON")
    elif action == "block-stop-unless" and not Path(arg).exists():
        print(json.dumps({"decision": "block", "reason": f"{arg} is missing: create it before you stop"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
