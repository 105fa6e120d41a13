"""``threadline replay FILE`` and ``threadline demo``: a recorded session through the real server, no model."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = sub.add_parser("replay", help="replay a recorded OpenAI-message session through the real server")
    replay.add_argument("file", type=Path)
    replay.add_argument("--context-window", type=positive, help="context window in tokens")
    replay.add_argument("--keep-recent", type=positive, help="recent-tail budget in tokens")
    replay.add_argument("--json", action="store_true", help="end with a JSON summary line")
    replay.add_argument(
        "--requests-out",
        type=Path,
        metavar="OUT.jsonl",
        help='write one line per model call, in order: {"step": i, "messages": [...]} as sent',
    )
    replay.set_defaults(run=_replay)

    demo = sub.add_parser("demo", help="replay a bundled real session at a small window and draw a picture of it")
    demo.add_argument("--out", type=Path, help="where to write the SVG picture (default ./threadline-demo.svg)")
    demo.add_argument("--context-window", type=positive, default=None, help="context window in tokens (default 16000)")
    demo.set_defaults(run=_demo)


def positive(text: str) -> int:
    """A whole number above 0 (a window of 0 tokens is no window); argparse says so in one line."""
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of tokens, got {text}")
    return value


def _replay(args: argparse.Namespace) -> int:
    from server.cli.replay_run import print_report, replay_file

    try:
        report = asyncio.run(
            replay_file(args.file, args.context_window, args.keep_recent, requests_out=args.requests_out)
        )
    except (OSError, ValueError) as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
    print_report(report, sys.stdout, as_json=args.json)
    return 1 if report.errors else 0


def _demo(args: argparse.Namespace) -> int:
    import tempfile

    from server.cli.demo import DEFAULT_PICTURE, DEMO_WINDOW, demo_session, draw
    from server.cli.replay_run import cache_breaks, print_report, replay_file

    window = args.context_window or DEMO_WINDOW
    out = (args.out or DEFAULT_PICTURE).resolve()
    if out.is_dir():  # said now, not after the whole replay
        print(
            f"threadline: --out {args.out} is a folder: give a file name, e.g. {out / DEFAULT_PICTURE}", file=sys.stderr
        )
        return 2
    print(
        f"Replaying a real recorded coding session ({demo_session().name}, Apache-2.0, see NOTICE.md beside it)\n"
        f"through the real server and agent loop at a {window:,}-token window. No model is called.\n"
    )
    with tempfile.TemporaryDirectory(prefix="threadline-demo-") as tmp:
        requests = Path(tmp) / "requests.jsonl"
        report = asyncio.run(replay_file(demo_session(), window, requests_out=requests))
        breaks = cache_breaks(requests)
    print_report(report, sys.stdout)
    print(
        f"{len(breaks)} of {len(report.steps)} model calls broke the prompt cache (their unchanged prefix was "
        "under half of the previous request)"
    )
    threshold = report.threshold_tokens or window  # the server's threshold at this window (getContextView)
    picture = draw(report, threshold, f"kimi-cli session replayed at a {window // 1000}K window", breaks)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(picture, encoding="utf-8")
    print(f"\npicture: {out}")
    print(
        "next: point THREADLINE_BASE_URL, THREADLINE_MODEL and THREADLINE_API_KEY at a provider, then run "
        '`threadline chat --cwd DIR "your task"`'
    )
    return 1 if report.errors else 0
