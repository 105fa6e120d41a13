"""``threadline replay FILE`` and ``threadline demo``: a recorded session through the real server, no model."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path


def add_parsers(sub: argparse._SubParsersAction) -> None:
    replay = sub.add_parser("replay", help="replay a recorded OpenAI-message session through the real server")
    replay.add_argument("file", type=Path)
    replay.add_argument("--context-window", type=int, help="context window in tokens")
    replay.add_argument("--keep-recent", type=int, help="recent-tail budget in tokens")
    replay.add_argument("--json", action="store_true", help="end with a JSON summary line")
    replay.set_defaults(run=_replay)


def _replay(args) -> int:
    from server.replay_run import print_report, replay_file

    try:
        report = asyncio.run(replay_file(args.file, args.context_window, args.keep_recent))
    except (OSError, ValueError) as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
    print_report(report, sys.stdout, as_json=args.json)
    return 1 if report.errors else 0
