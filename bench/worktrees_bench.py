"""Worktree sessions in parallel (B-WT-1, docs/WORKTREES.md): writes bench/WORKTREES.md and bench/worktrees.json.

    .venv/bin/python bench/worktrees_bench.py [--steps 6] [--delay 0.5] [--lines 50000]

One daemon (reached through real ``threadline connect`` bridges), one repository, the model double answering each
call after ``--delay`` seconds (standing in for a model's latency). A task is a worktree session whose turn makes
``--steps`` tool calls, each a real command under the session's sandbox (this machine's, when it has one) that
writes a file of ``--lines`` lines, checksums the worktree and commits, then a final answer. Three shapes, wall
time from the first ``submitTurn`` to the last answer:

1. one task alone;
2. three tasks one after another (what one session at a time costs);
3. three tasks at once, each in its own worktree (the double hands out the same ``3 * steps`` commands to whichever
   session asks first, so the work is the same as in 2, however it is shared out).

Every run checks its branches hold the commits it made and that the main checkout did not move.

Benchmarks are not tests: figures live in WORKTREES.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from server.cli.client import Client
from server.sandbox.runner import support
from tests.fakes.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parent.parent
KEY = "bench-key"
BRIDGE = [sys.executable, "-m", "server", "connect"]
COMMIT = "git -c user.name=Bench -c user.email=bench@example.com -c commit.gpgsign=false commit -q"


def _env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    return env | {
        "THREADLINE_HOME": str(home),
        "THREADLINE_BASE_URL": url,
        "THREADLINE_MODEL": "bench-model",
        "THREADLINE_API_KEY": KEY,
    }


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("bench\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "start")
    return repo


def _step(lines: int) -> dict[str, Any]:
    work = (
        f"n=$(ls step-*.txt 2>/dev/null | wc -l) && seq 1 {lines} > step-$n.txt && sha256sum step-*.txt > sums "
        f"&& git add -A && {COMMIT} -m step-$n && git log --oneline | wc -l"
    )
    return {"tool_calls": [{"id": "c", "name": "run_command", "arguments": {"command": work}}]}


async def _run(client: Client, fake: FakeProvider, repo: Path, names: list[str], parallel: bool, args: Any) -> float:
    sids = []
    for name in names:
        made = await client.request("createSession", {"cwd": str(repo), "worktree": name, "approvalPolicy": "auto"})
        sids.append(made["sessionId"])
    delay = {"delay": args.delay}
    head = _git(repo, "rev-parse", "HEAD")
    started = time.perf_counter()
    if parallel:
        fake.push(*[_step(args.lines) | delay] * (args.steps * len(sids)), *[{"content": "done"} | delay] * len(sids))
        answers = await asyncio.gather(*(client.request("submitTurn", {"sessionId": s, "text": "go"}) for s in sids))
    else:
        answers = []
        for sid in sids:
            fake.push(*[_step(args.lines) | delay] * args.steps, {"content": "done"} | delay)
            answers.append(await client.request("submitTurn", {"sessionId": sid, "text": "go"}))
    seconds = time.perf_counter() - started
    assert all(a["stopReason"] == "endTurn" for a in answers), answers
    commits = sum(int(_git(repo, "rev-list", "--count", f"main..threadline/{n}")) for n in names)
    assert commits == args.steps * len(names), commits
    assert _git(repo, "rev-parse", "HEAD") == head
    return seconds


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="tl-wt-bench-") as tmp, FakeProvider(api_key=KEY) as fake:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        repo = _repo(root)
        client = await Client.spawn(env=_env(home, fake.url), args=BRIDGE, cwd=str(ROOT))
        try:
            one = await _run(client, fake, repo, ["one"], False, args)
            sequential = await _run(client, fake, repo, ["s1", "s2", "s3"], False, args)
            parallel = await _run(client, fake, repo, ["p1", "p2", "p3"], True, args)
        finally:
            await client.close()
            _stop_daemon(home)
    figures = {"one": one, "three_one_after_another": sequential, "three_at_once": parallel}
    found = support()
    result = {
        "args": vars(args),
        "seconds": figures,
        "sandbox": found.mechanism if found.enforced else "off (not enforced here)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    (ROOT / "bench" / "worktrees.json").write_text(json.dumps(result, indent=2) + "\n")
    (ROOT / "bench" / "WORKTREES.md").write_text(report(args, result))
    print(report(args, result))


def _stop_daemon(home: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.kill(int((home / "daemon" / "lock").read_text().strip()), signal.SIGTERM)


def report(args: argparse.Namespace, result: dict[str, Any]) -> str:
    s = result["seconds"]
    command = (
        f".venv/bin/python bench/worktrees_bench.py --steps {args.steps} --delay {args.delay} --lines {args.lines}"
    )
    return f"""# Worktree sessions in parallel (B-WT-1)

Command: `{command}`. Machine: {result["machine"]} (shared with other work while it ran). Sandbox:
{result["sandbox"]}. One daemon through `threadline connect`; each task is a worktree session of one repository
whose turn makes {args.steps} tool calls (a real command: write a {args.lines}-line file, checksum the worktree,
`git commit`, confined), the model double answering each call after {args.delay} s. Wall time from the first
`submitTurn` to the last answer; every run checked its branches hold its commits and the main checkout did not move.

| shape | seconds | against one task |
|---|---:|---:|
| one task | {s["one"]:.2f} | 1.00 |
| three tasks, one after another | {s["three_one_after_another"]:.2f} | {s["three_one_after_another"] / s["one"]:.2f} |
| three tasks at once, each in its own worktree | {s["three_at_once"]:.2f} | {s["three_at_once"] / s["one"]:.2f} |

Three at once take {s["three_at_once"] / s["three_one_after_another"]:.2f} of the time of three one after another:
the model's latency overlaps, and the commands share the machine's cores. Raw figures: `bench/worktrees.json`.
"""


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--lines", type=int, default=50_000)
    asyncio.run(main(parser.parse_args()))
