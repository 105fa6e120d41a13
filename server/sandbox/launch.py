"""The launcher: ``python -I -S launch.py [--join SPEC] POLICY_JSON|- NAMESPACES -- COMMAND ARGS``.

Confines itself under the sandbox policy (``-``: none), then execs the command. With ``--join`` (the keeper's
``INIT:PIDNS:USERNS``, ``server.sandbox.contain``) it first enters the server's PID namespace and forks the
command into it (confined there), waits for it and exits with its status: the command and whatever it starts
then end with the server, however the server ends.

Started by the server, the CLI and MCP, always as a plain argv prefix (``server.sandbox.runner.wrap``,
``Keeper.argv``), so any process start can be confined and contained the same way. It imports only the stdlib
and this package's stdlib-only modules, so the interpreter starts without site-packages (``-S``): that keeps its
cost near 15 ms (bench/sandbox_bench.py). If confinement fails the command never runs: exit status 125 and the
reason on stderr (never unconfined, B-SBX-2).
"""

from __future__ import annotations

import os
import sys

SETUP_FAILED = 125


def main(argv: list[str]) -> int:
    join = None
    if len(argv) >= 2 and argv[0] == "--join":
        join, argv = argv[1], argv[2:]
    if len(argv) < 4 or argv[2] != "--":
        print("usage: launch.py [--join SPEC] POLICY_JSON|- NAMESPACES(0|1) -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    from server.sandbox.contain import join as join_namespace
    from server.sandbox.contain import run_inside

    policy_json, namespaces, command = argv[0], argv[1] == "1", argv[3:]
    if join is not None:
        try:
            join_namespace(join)
        except (OSError, ValueError) as exc:
            print(f"threadline: could not start the command in the server's namespace: {exc}", file=sys.stderr)
            return SETUP_FAILED
        return run_inside(lambda: _start(policy_json, namespaces, command))
    return _start(policy_json, namespaces, command)


def _start(policy_json: str, namespaces: bool, command: list[str]) -> int:
    if policy_json != "-":
        from server.sandbox.linux import enter
        from server.sandbox.policy import SandboxPolicy

        try:
            enter(SandboxPolicy.from_json(policy_json), namespaces=namespaces)
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
