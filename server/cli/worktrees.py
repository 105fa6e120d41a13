"""``threadline worktrees merge|discard SESSION`` (B-WT-1, docs/WORKTREES.md): a worktree session's branch merged
into its base, or its worktree discarded, through the daemon when one runs (where the session's turn would run,
so neither happens while it does) or a server of its own; and how ``threadline sessions`` shows a worktree."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from protocol.worktrees import DiscardWorktreeResult, MergeWorktreeResult, WorktreeInfo
from server.cli.client import Client

Runner = Callable[..., int]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], client_run: Runner) -> None:
    p = sub.add_parser("worktrees", help="merge or discard a worktree session's work (docs/WORKTREES.md)")
    actions = p.add_subparsers(dest="action", required=True)
    merge = actions.add_parser("merge", help="merge the session's branch into its base in the main checkout")
    merge.add_argument("session", help="the session id (threadline sessions lists them)")
    merge.add_argument("--strategy", choices=("merge", "squash", "rebase"), default="merge")
    merge.set_defaults(run=lambda a: client_run(_merge, a, daemon_if_running=True))
    discard = actions.add_parser("discard", help="remove the session's worktree (the session stays readable)")
    discard.add_argument("session")
    discard.add_argument("--delete-branch", action="store_true", help="delete its branch threadline/NAME too")
    discard.set_defaults(run=lambda a: client_run(_discard, a, daemon_if_running=True))


async def _merge(client: Client, args: argparse.Namespace) -> int:
    params = {"sessionId": args.session, "strategy": args.strategy}
    done = await client.call("mergeWorktree", params, MergeWorktreeResult)
    if not done.merged:
        files = "\n".join(f"  {path}" for path in done.conflicts or [])
        print(f"not merged: these files conflict (the main checkout is as it was):\n{files}", file=sys.stderr)
        return 1
    print(f"merged{f' ({done.commit[:12]})' if done.commit else ''}")
    return 0


async def _discard(client: Client, args: argparse.Namespace) -> int:
    params = {"sessionId": args.session, "deleteBranch": args.delete_branch}
    done = await client.call("discardWorktree", params, DiscardWorktreeResult)
    print("discarded" if done.discarded else "already discarded")
    return 0


def worktree_line(worktree: WorktreeInfo | None) -> str:
    """`` [threadline/NAME 2 files +10 -3, 1 ahead of main]``, with its state once merged or discarded."""
    if worktree is None:
        return ""
    state = "" if worktree.state == "active" else f", {worktree.state}"
    stat = f"{worktree.files_changed} files +{worktree.insertions} -{worktree.deletions}"
    return f"  [{worktree.branch} {stat}, {worktree.ahead} ahead of {worktree.base}{state}]"
