"""Responsiveness under load (issue 50): one server, many turns at once, and how long a read waits meanwhile.

    .venv/bin/python bench/load_bench.py [--sessions 100] [--calls 20] [--runs 1] [--out bench/LOAD.md]
    .venv/bin/python bench/load_bench.py --compare /tmp/main   # main's server (`git archive main`) beside this one

One stdio server (``python -m server``, sandbox off) on a fresh data folder; ``--sessions`` sessions each run one
turn of ``--calls`` tool calls (``read_file`` of a small file) and a closing answer against the model double
(``tests/fakes/fake_provider.py``, its own process, scripted: sessions x calls tool-call answers, then one text
answer a session, so sessions x (calls + 1) model calls). All turns are submitted at once; from the first
``submitTurn`` to the last turn's end the same client calls ``listSessions`` in a loop, one at a time. Reported:
the wall time of the whole load, model calls per second, and ``listSessions``' count, median, p99 and slowest.

Benchmarks are not tests: figures live in bench/LOAD.md (and bench/load.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from server.cli.client import Client

REPO = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
KEY = "bench-key"
FAKE = REPO / "tests" / "fakes" / "fake_provider.py"


def script(sessions: int, calls: int) -> list[dict[str, Any]]:
    """The model's answers in the order asked: every tool-call answer first, then the closing answers. Each
    session has one model call in flight until its closing answer, so each turn ends exactly once."""
    tools = [
        {
            "content": "",
            "chunks": 1,
            "tool_calls": [{"id": f"c{n}", "name": "read_file", "arguments": {"path": "notes.txt"}}],
        }
        for n in range(sessions * calls)
    ]
    return tools + [{"content": "done", "chunks": 2} for _ in range(sessions)]


def _env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    return env | {
        "THREADLINE_HOME": str(home),
        "THREADLINE_BASE_URL": url,
        "THREADLINE_MODEL": "bench-model",
        "THREADLINE_API_KEY": KEY,
        "THREADLINE_SANDBOX": "off",
        "THREADLINE_APPROVAL_POLICY": "auto",
    }


def _start_fake(items: list[dict[str, Any]], folder: Path) -> tuple[subprocess.Popen[str], str]:
    path = folder / "script.json"
    path.write_text(json.dumps(items))
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "--api-key", KEY, "--script", str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("FAKE_PROVIDER_URL="):
        proc.kill()
        raise RuntimeError(f"the model double did not start: {line!r}")
    return proc, line.split("=", 1)[1]


def _cpu_seconds(pid: int) -> float:
    """The server process's CPU time so far (user + system, all its threads; Linux), 0 where /proc is absent."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_run(base: Path, sessions: int, calls: int, repo: Path = REPO) -> dict[str, Any]:
    fake, url = _start_fake(script(sessions, calls), base)
    home = base / "home"
    client = await Client.spawn(env=_env(home, url), args=[sys.executable, "-m", "server"], cwd=str(repo))
    client.on_request = lambda method, params: {"decision": "allowOnce"}
    try:
        sids = []
        for i in range(sessions):
            work = base / f"w{i}"
            work.mkdir()
            (work / "notes.txt").write_text(f"session {i}\n" + "a line of notes\n" * 40)
            sids.append((await client.request("createSession", {"cwd": str(work)}))["sessionId"])
        await client.request("listSessions", {})  # warm
        done = asyncio.Event()
        waits: list[float] = []

        async def lister() -> None:
            while not done.is_set():
                started = time.perf_counter()
                await client.request("listSessions", {})
                waits.append(time.perf_counter() - started)

        started = time.perf_counter()
        listing = asyncio.create_task(lister())
        results = await asyncio.wait_for(
            asyncio.gather(*(client.request("submitTurn", {"sessionId": s, "text": "go"}) for s in sids)), 1800
        )
        elapsed = time.perf_counter() - started
        cpu = _cpu_seconds(client.proc.pid)
        done.set()
        await listing
        stops = sorted({r["stopReason"] for r in results})
        ms = sorted(w * 1000 for w in waits)
        return {
            "sessions": sessions,
            "toolCallsPerTurn": calls,
            "modelCalls": sessions * (calls + 1),
            "stopReasons": stops,
            "seconds": round(elapsed, 2),
            "modelCallsPerSecond": round(sessions * (calls + 1) / elapsed, 1),
            "serverCpuSeconds": round(cpu, 2),
            "listSessions": {
                "answered": len(ms),
                "medianMs": round(statistics.median(ms), 1),
                "p99Ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 1),
                "maxMs": round(ms[-1], 1),
            },
        }
    finally:
        await client.close()
        fake.kill()
        fake.wait()


def report(command: str, runs: list[dict[str, Any]]) -> str:
    rows = "\n".join(
        f"| {i + 1} | {r['server']} | {r['modelCalls']:,} | {', '.join(r['stopReasons'])} | {r['seconds']} | "
        f"{r['modelCallsPerSecond']} | {r['serverCpuSeconds']} | {r['listSessions']['answered']} | "
        f"{r['listSessions']['medianMs']} | {r['listSessions']['p99Ms']} | {r['listSessions']['maxMs']} |"
        for i, r in enumerate(runs)
    )
    first = runs[0]
    return f"""# Responsiveness under load (issue 50)

Command: `{command}`. Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}
(shared with other work while it ran). One stdio server, {first["sessions"]} sessions each running one turn of
{first["toolCallsPerTurn"]} `read_file` calls and a closing answer at once against the scripted model double (its own
process); the same client calls `listSessions` in a loop, one at a time, until the last turn ends. Server CPU is
the server process's user + system time (all its threads) at the end of the load. With `--compare`, each run is
the other checkout's server, then this one's, back to back.

| run | server | model calls | stop reasons | seconds | model calls/s | server CPU s | listSessions answered | median ms | p99 ms | slowest ms |
|---:|:--|---:|:--|---:|---:|---:|---:|---:|---:|---:|
{rows}

Raw figures: `bench/load.json`.
"""


def results_section() -> list[str]:
    """RESULTS.md's section for this bench, from the committed bench/load.json (bench/run.py appends it)."""
    path = HERE / "load.json"
    if not path.exists():
        return []
    saved = json.loads(path.read_text(encoding="utf-8"))
    text = report(saved["command"], saved["runs"])
    body = text.split("\n", 2)[2]  # without LOAD.md's title
    return ["## 8. Responsiveness under load (bench/load_bench.py, bench/LOAD.md)", "", *body.rstrip().splitlines()]


async def main(args: argparse.Namespace) -> None:
    servers = ([("compared", Path(args.compare))] if args.compare else []) + [("this checkout", Path(args.repo))]
    runs = []
    for n in range(args.runs):
        for label, repo in servers:
            with tempfile.TemporaryDirectory(prefix="tl-bench-load-") as tmp:
                print(f"run {n + 1}/{args.runs}: {label}", flush=True)
                runs.append({"server": label, **await one_run(Path(tmp), args.sessions, args.calls, repo)})
                print(json.dumps(runs[-1]), flush=True)
    command = f".venv/bin/python bench/load_bench.py --sessions {args.sessions} --calls {args.calls} --runs {args.runs}"
    if args.compare:
        command += f" --compare {args.compare}"
    if args.out is None:
        return
    out = Path(args.out)
    out.write_text(report(command, runs))
    out.with_name("load.json").write_text(json.dumps({"command": command, "runs": runs}, indent=2) + "\n")
    print(out.read_text())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--repo", default=str(REPO), help="run the server of another checkout (e.g. `git archive` of main)"
    )
    parser.add_argument("--compare", help="a second checkout whose server runs before this one's, each run")
    parser.add_argument("--out", default=str(HERE / "LOAD.md"), help="where the report goes ('' : print only)")
    args = parser.parse_args()
    if args.out == "":
        args.out = None
    asyncio.run(main(args))
