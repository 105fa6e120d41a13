#!/usr/bin/env python3
"""Stop hook: refuse to let the turn end while ``pytest`` fails (Threadline sends the turn on with the failures,
at most 3 times a turn).

    [[hooks.Stop]]
    command = "python3 /path/to/stop_until_pytest_passes.py"
    timeout = 300
"""

import json
import subprocess
import sys

json.load(sys.stdin)
done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "--no-header"], capture_output=True, text=True)
if done.returncode not in (0, 5):  # 5: no tests collected
    tail = "\n".join(done.stdout.strip().splitlines()[-15:])
    print(json.dumps({"decision": "block", "reason": f"pytest still fails; fix it before you stop:\n{tail}"}))
