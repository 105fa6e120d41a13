"""The launcher: ``python -I -S launch.py POLICY_JSON NAMESPACES -- COMMAND ARGS`` confines itself, then execs.

Started by the server, the CLI and MCP, always as a plain argv prefix (``server.sandbox.runner.wrap``), so any
process start can be confined the same way. It imports only the stdlib and this package's stdlib-only modules,
so the interpreter starts without site-packages (``-S``): that keeps its cost near 15 ms (bench/sandbox_bench.py).
If confinement fails the command never runs: exit status 125 and the reason on stderr (never unconfined, B-SBX-2).
"""

from __future__ import annotations

import os
import sys

SETUP_FAILED = 125


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: launch.py POLICY_JSON NAMESPACES(0|1) -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    from server.sandbox.linux import enter
    from server.sandbox.policy import SandboxPolicy

    policy_json, namespaces, command = argv[0], argv[1] == "1", argv[3:]
    try:
        policy = SandboxPolicy.from_json(policy_json)
        enter(policy, namespaces=namespaces)
    except (OSError, ValueError, TypeError) as exc:
        print(f"threadline sandbox: could not confine the command, so it did not run: {exc}", file=sys.stderr)
        return SETUP_FAILED
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"threadline sandbox: {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    # -I leaves the script's folder off sys.path: put the folder holding the ``server`` package there.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    sys.exit(main(sys.argv[1:]))
