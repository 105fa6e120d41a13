"""The flags that pick and set up a session, one definition for every command that runs turns (``threadline chat``,
``threadline exec``): ``--cwd``, ``--resume SESSION_ID`` or ``--continue`` (the folder's most recent session),
``--model NAME`` (a ``[models.NAME]``), ``--policy``, ``--sandbox MODE`` and ``--worktree NAME``. Only argparse here: ``exec`` defines
its parser before the server it starts boots, so nothing heavier is imported on that path (``server.cli.session_flags``
checks the values once the server is on its way).
"""

from __future__ import annotations

import argparse


def add_session_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", default=".", help="the session folder (default: the current folder)")
    parser.add_argument("--model", metavar="NAME", help="a [models.NAME] of config.toml (default: [provider])")
    parser.add_argument(
        "--policy", help="approval policy: ask (default), autoEdit, auto (everything runs), plan (read and plan only)"
    )
    parser.add_argument("--sandbox", metavar="MODE", help="sandbox mode for run_command, where the server has one")
    parser.add_argument(
        "--worktree",
        metavar="NAME",
        help="work in a new git worktree of the folder's repository, on branch threadline/NAME (docs/WORKTREES.md)",
    )
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument("--resume", metavar="SESSION_ID", help="continue that session")
    resume.add_argument(
        "--continue", dest="continue_", action="store_true", help="continue the folder's most recent session"
    )
