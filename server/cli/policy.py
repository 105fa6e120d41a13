"""``threadline policy-check FILE [--session ID] [--cwd DIR] [--policy P] [--json] [--fail-on deny|ask]``.

For every tool call of a recorded session (an OpenAI-message JSON file as ``import`` takes, or a stored session),
the decision the live server would make (``allow``, ``ask``, ``deny`` or ``forbidden``) and what made it, asked of
a server this command starts (``checkPolicy``: the server's own decision code; the ``PreToolUse`` hooks run with
the recorded input; no tool runs, no model is called). ``--fail-on deny`` exits 1 when a call gets that decision
or a worse one (``ask`` < ``deny`` < ``forbidden``), so a team can check its rules in CI before rolling them out.
A file recorded by Claude Code has its tools read as Threadline's (``Bash`` as ``run_command``, ...; a note on
stderr says which, and which are foreign: ``server.cli.foreign_tools``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from protocol.messages import CheckPolicyResult
from server.cli.client import Client
from server.cli.foreign_tools import Translation, translate

SEVERITY = {"allow": 0, "ask": 1, "deny": 2, "forbidden": 3}


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    client_run: Callable[..., int],
    load_messages: Callable[[Path], list[dict[str, Any]]],
) -> None:
    check = sub.add_parser(
        "policy-check", help="the decision the live server would make for every tool call of a recorded session"
    )
    check.add_argument("file", type=Path, nargs="?", help="an OpenAI-message JSON file (or give --session)")
    check.add_argument("--session", help="a stored session instead of a file")
    check.add_argument("--cwd", default=".", help="the folder whose hooks and rules apply (default: here)")
    check.add_argument(
        "--policy", choices=["ask", "autoEdit", "auto", "plan"], help="the approval policy to check under"
    )
    check.add_argument("--json", action="store_true", help="print {calls, summary} as JSON")
    check.add_argument("--fail-on", choices=["deny", "ask"], help="exit 1 when a call gets this decision or worse")

    def run(args: argparse.Namespace) -> int:
        if (args.file is None) == (args.session is None):
            check.error("give a FILE or --session ID (one of them)")
        translated = translate(load_messages(args.file)) if args.file is not None else None
        return client_run(lambda client, a: policy_check(client, a, translated), args)

    check.set_defaults(run=run)


async def policy_check(client: Client, args: argparse.Namespace, translated: Translation | None) -> int:
    params: dict[str, Any] = {"cwd": str(Path(args.cwd).resolve())}
    if args.policy:
        params["policy"] = args.policy
    if translated is not None:
        params["messages"] = translated.messages
    else:
        params["sessionId"] = args.session
    result = await client.call("checkPolicy", params, CheckPolicyResult)
    if translated is not None:
        unknown = Counter(c.tool for c in result.calls if c.by == "unknown tool")
        for note in translated.notes(unknown):
            print(f"threadline policy-check: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(msgspec.to_builtins(result), ensure_ascii=False, indent=2))
    else:
        for c in result.calls:
            reason = f": {c.reason}" if c.reason else ""
            print(f"#{c.index:<3} {c.decision:<9} {c.tool} ({c.tool_call_id}) by {c.by}{reason}")
        s = result.summary
        print(f"{len(result.calls)} calls: {s.allow} allow, {s.ask} ask, {s.deny} deny, {s.forbidden} forbidden")
    if args.fail_on is None:
        return 0
    bar = SEVERITY[args.fail_on]
    return 1 if any(SEVERITY[c.decision] >= bar for c in result.calls) else 0
