"""How long ``threadline exec`` takes from its start to the first model request (CI pays it every run), against the
floor: a bare Python process that imports httpx and sends the same request to the same model double.

Each run starts the real command (``.venv/bin/threadline exec``, which runs the server in its own process) against
the model double, which records the wall-clock arrival of each request; the figure is that arrival minus the moment
just before the command was started. The floor is measured the same way in the same run, alternating with exec's runs so both
see the same load. *Fresh home*: a new ``THREADLINE_HOME`` each run (a CI job's first run: the database is
created); *warm home*: the same home again. The key is passed in the environment, as CI does.

    .venv/bin/python -m bench.exec_start [--runs N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO
from tests.fakes.fake_provider import FakeProvider

THREADLINE = REPO / ".venv" / "bin" / "threadline"
KEY = "sk-bench-exec-start"


def one_run(fake: FakeProvider, home: Path, folder: Path) -> tuple[float, float]:
    """Milliseconds from just before the command starts to the double receiving its first model request, and the
    CPU milliseconds (user + system) the command and its server used over the whole run (the machine is shared:
    under load the wall time grows, the CPU time much less)."""
    fake.reset()
    env = {
        "PATH": "/usr/bin:/bin",
        "THREADLINE_HOME": str(home),
        "THREADLINE_BASE_URL": fake.url,
        "THREADLINE_MODEL": "fake-model",
        "THREADLINE_API_KEY": KEY,
    }
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    run = subprocess.run(
        [str(THREADLINE), "exec", "--cwd", str(folder), "--output-format", "json", "hello"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if run.returncode != 0:
        raise SystemExit(f"threadline exec failed ({run.returncode}): {run.stderr}")
    first = min(r["received_at"] for r in fake.requests if r["path"].endswith("/chat/completions"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
    return (first - started) * 1000, used * 1000


# The floor: what any Python client of the provider pays (the interpreter, httpx, one request like exec's first).
FLOOR = """
import sys, httpx
httpx.post(sys.argv[1] + "/chat/completions", headers={"Authorization": "Bearer " + sys.argv[2]}, timeout=60,
           json={"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hello"}]})
"""


def floor_run(fake: FakeProvider) -> float:
    """Milliseconds from just before a bare ``python -c 'import httpx; httpx.post(...)'`` starts to the double
    receiving its request."""
    fake.reset()
    started = time.time()
    subprocess.run([sys.executable, "-c", FLOOR, fake.url, KEY], env={"PATH": "/usr/bin:/bin"}, check=True, timeout=60)
    return (min(r["received_at"] for r in fake.requests) - started) * 1000


def measure(runs: int) -> dict[str, Any]:
    with FakeProvider(api_key=KEY) as fake, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        floor, fresh = [], []
        for _ in range(runs):
            floor.append(floor_run(fake))
            fresh.append(one_run(fake, Path(tempfile.mkdtemp(dir=tmp)), folder))
        warm_home = Path(tmp) / "warm"
        warm_home.mkdir()
        one_run(fake, warm_home, folder)  # creates the database once
        warm = [one_run(fake, warm_home, folder) for _ in range(runs)]
    floor_ms = statistics.median(floor)
    return {
        "runs": runs,
        "floor_ms": _stats(floor),
        "fresh_home_ms": _stats([wall for wall, _ in fresh]),
        "warm_home_ms": _stats([wall for wall, _ in warm]),
        "fresh_over_floor": round(statistics.median(wall for wall, _ in fresh) / floor_ms, 2),
        "warm_over_floor": round(statistics.median(wall for wall, _ in warm) / floor_ms, 2),
        "whole_run_cpu_ms": _stats([cpu for _, cpu in fresh + warm]),
        "import_cpu_ms": import_cpu_ms(),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
    }


# Where the time goes: the CPU an interpreter spends importing each of these (min of 5), before any work.
IMPORTS = {
    "python alone": "pass",
    "httpx (the floor's import)": "import httpx",
    "the services without the edge (server.runtime)": "import server.runtime",
    "the exec client (server.cli.exec)": "import server.cli.exec",
    "exec's in-process server (server.edge.local, no pygls)": "import server.edge.local",
    "lsprotocol.types (pygls's LSP types)": "import lsprotocol.types",
    "pygls.lsp.server": "import pygls.lsp.server",
    "the whole server (server.edge.app)": "import server.edge.app",
}


def import_cpu_ms() -> dict[str, int]:
    costs = {}
    for name, code in IMPORTS.items():
        best = float("inf")
        for _ in range(5):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            best = min(best, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        costs[name] = round(best * 1000)
    return costs


def _stats(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values)),
        "min": round(min(values)),
        "max": round(max(values)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    figures = measure(args.runs)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
