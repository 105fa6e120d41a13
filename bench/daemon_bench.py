"""The daemon's cost (B-DAEMON-1, docs/DAEMON.md): writes bench/DAEMON.md.

    .venv/bin/python bench/daemon_bench.py [--deltas 4000] [--clients 10] [--calls 200] [--messages 1000]

1. Fan-out: one busy session streams ``--deltas`` ``assistantDelta`` updates (the model double sends its chunks as
   fast as it can) to 1, then ``--clients`` clients attached through real ``threadline connect`` bridges; updates
   per second delivered (every client's count, summed) from the turn's first update to the last client's
   ``turnCompleted``.
2. Latency: ``getContextView`` on a ``--messages``-message session, ``--calls`` times in a row, through stdio
   ``threadline serve`` and through ``threadline connect`` to the daemon: the medians and their ratio (what the
   bridge's extra hop costs a request).

Benchmarks are not tests: figures live in DAEMON.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from server.cli.client import Client
from tests.fakes.fake_provider import FakeProvider

REPO = Path(__file__).resolve().parent.parent
KEY = "bench-key"
BRIDGE = [sys.executable, "-m", "server", "connect"]
SERVE = [sys.executable, "-m", "server"]


def _env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    return env | {
        "THREADLINE_HOME": str(home),
        "THREADLINE_BASE_URL": url,
        "THREADLINE_MODEL": "bench-model",
        "THREADLINE_API_KEY": KEY,
        "THREADLINE_SANDBOX": "off",
    }


def _stop_daemon(home: Path) -> None:
    try:
        pid = int((home / "daemon" / "lock").read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    for _ in range(400):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


async def fan_out(home: Path, fake: FakeProvider, deltas: int, clients: int) -> dict[str, Any]:
    env = _env(home, fake.url)
    owner = await Client.spawn(env=env, args=BRIDGE, cwd=str(REPO))
    watchers = [await Client.spawn(env=env, args=BRIDGE, cwd=str(REPO)) for _ in range(clients - 1)]
    everyone = [owner, *watchers]
    try:
        sid = (await owner.request("createSession", {"cwd": str(home)}))["sessionId"]
        for w in watchers:
            await w.request("attachSession", {"sessionId": sid})
        done = [asyncio.get_running_loop().create_future() for _ in everyone]
        first: list[float] = []
        counts = [0] * len(everyone)

        def counter(i: int) -> Any:
            def on(method: str, params: Any) -> None:
                if method != "sessionUpdate" or params["sessionId"] != sid:
                    return
                counts[i] += 1
                if not first:
                    first.append(time.perf_counter())
                if params["update"]["kind"] == "turnCompleted" and not done[i].done():
                    done[i].set_result(time.perf_counter())

            return on

        for i, client in enumerate(everyone):
            client.on_notification = counter(i)
        fake.push({"content": "x" * deltas, "chunks": deltas})
        await asyncio.wait_for(owner.request("submitTurn", {"sessionId": sid, "text": "stream"}), 600)
        ends = await asyncio.wait_for(asyncio.gather(*done), 600)
        elapsed = max(ends) - first[0]
        delivered = sum(counts)
        return {
            "clients": clients,
            "updatesPerClient": counts[0],
            "delivered": delivered,
            "seconds": round(elapsed, 3),
            "updatesPerSecond": round(delivered / elapsed),
            "allSame": len(set(counts)) == 1,
        }
    finally:
        for client in everyone:
            await client.close()


async def _session_with(client: Client, home: Path, messages: int) -> str:
    convo: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(messages // 2):
        convo.append({"role": "user", "content": f"Question {i}: what does module_{i}.py do? " + "detail " * 20})
        convo.append({"role": "assistant", "content": f"Answer {i}: it parses things. " + "because " * 30})
    result = await client.request("importSession", {"cwd": str(home), "title": "bench", "messages": convo})
    return str(result["sessionId"])


async def _median_view(client: Client, sid: str, calls: int) -> float:
    await client.request("getContextView", {"sessionId": sid})  # warm: the view state is built once
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.request("getContextView", {"sessionId": sid})
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def latency(home: Path, fake: FakeProvider, calls: int, messages: int) -> dict[str, Any]:
    env = _env(home, fake.url)
    serve = await Client.spawn(env=env, args=SERVE, cwd=str(REPO))
    try:
        sid = await _session_with(serve, home, messages)
        serve_ms = await _median_view(serve, sid, calls)
    finally:
        await serve.close()
    connect = await Client.spawn(env=env, args=BRIDGE, cwd=str(REPO))
    try:
        connect_ms = await _median_view(connect, sid, calls)
    finally:
        await connect.close()
    return {
        "messages": messages,
        "calls": calls,
        "serveMedianMs": round(serve_ms, 3),
        "connectMedianMs": round(connect_ms, 3),
        "ratio": round(connect_ms / serve_ms, 3),
    }


def report(args: argparse.Namespace, one: dict[str, Any], many: dict[str, Any], lat: dict[str, Any]) -> str:
    command = (
        f"`.venv/bin/python bench/daemon_bench.py --deltas {args.deltas} --clients {args.clients} "
        f"--calls {args.calls} --messages {args.messages}`"
    )
    rows = "\n".join(
        f"| {r['clients']} | {r['updatesPerClient']:,} | {r['delivered']:,} | {r['seconds']} | "
        f"{r['updatesPerSecond']:,} | {'yes' if r['allSame'] else 'NO'} |"
        for r in (one, many)
    )
    return f"""# The daemon: fan-out and the bridge's cost (B-DAEMON-1)

Command: {command}. Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}
(shared with other work while it ran). The model double streams as fast as it can; every client is a real
`threadline connect` bridge process and all clients are read by one Python process, so the figures include that
reader's own cost.

## 1. Updates per second to attached clients of one busy session

| clients | updates per client | updates delivered | seconds | delivered per second | every client got all |
|---:|---:|---:|---:|---:|:--:|
{rows}

## 2. getContextView latency: stdio `serve` vs `connect` to the daemon

A {lat["messages"]}-message imported session, {lat["calls"]} calls in a row after one warm-up, median:

| stdio serve (ms) | connect -> daemon (ms) | ratio |
|---:|---:|---:|
| {lat["serveMedianMs"]} | {lat["connectMedianMs"]} | {lat["ratio"]} |

Raw figures: `bench/daemon.json`.
"""


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="tl-bench-daemon-") as tmp, FakeProvider(api_key=KEY) as fake:
        base = Path(tmp)
        results: dict[str, Any] = {}
        try:
            results["one"] = await fan_out(base / "one", fake, args.deltas, 1)
        finally:
            _stop_daemon(base / "one")
        try:
            results["many"] = await fan_out(base / "many", fake, args.deltas, args.clients)
        finally:
            _stop_daemon(base / "many")
        try:
            results["latency"] = await latency(base / "lat", fake, args.calls, args.messages)
        finally:
            _stop_daemon(base / "lat")
    here = Path(__file__).resolve().parent
    (here / "daemon.json").write_text(json.dumps(results, indent=2) + "\n")
    text = report(args, results["one"], results["many"], results["latency"])
    (here / "DAEMON.md").write_text(text)
    print(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=4000)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--messages", type=int, default=1000)
    asyncio.run(main(parser.parse_args()))
