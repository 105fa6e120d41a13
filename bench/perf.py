"""Server performance: getContextView latency and RSS, and the loop's overhead per model call."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, TRAJECTORIES
from server.agent.approvals import Approvals
from server.agent.loop import Turn, TurnTotals
from server.agent.views import ViewBuilder, open_store, tool_reserve_tokens
from server.artifacts import ArtifactStore
from server.cli.client import Client
from server.config import Settings
from server.context import ViewSettings, estimate_message_tokens
from server.emit import Emitter
from server.providers import ChatResult, ToolCall
from server.tools import ToolContext, ToolOutcome
from server.transcript import NewMessage, Store

# --- sessions of any size, built through the store's API --------------------------------------------------


def _source_messages() -> list[dict[str, Any]]:
    """Real messages to cycle through: the kimi-cli and mini-swe-agent trajectories."""
    out = []
    for name in (
        "kimi-cli-entire__29_77bc73228c_1__full.json",
        "mini-swe-agent-pr816__deepseek_chat_dev_rerun__pylint-dev__astroid-1333.json",
    ):
        out += json.loads((TRAJECTORIES / name).read_text(encoding="utf-8"))
    return [m for m in out if m["role"] != "system"]


def _new_message(msg: dict[str, Any], cycle: int) -> NewMessage:
    calls = [dict(c, id=f"{c['id']}_{cycle}") for c in msg.get("tool_calls") or []] or None
    call_id = f"{msg['tool_call_id']}_{cycle}" if msg.get("tool_call_id") else None
    return NewMessage(msg["role"], msg.get("content"), tool_calls=calls, tool_call_id=call_id)


async def build_session(store: Store, cwd: str, count: int) -> str:
    source = _source_messages()
    session = await store.create_session(cwd, f"bench {count}")
    batch: list[NewMessage] = []
    for i in range(count):
        batch.append(_new_message(source[i % len(source)], i // len(source)))
        if len(batch) == 500:
            await store.append_messages(session.id, batch)
            batch = []
    if batch:
        await store.append_messages(session.id, batch)
    return session.id


# --- 1 and 3: getContextView latency and RSS ------------------------------------------------------------


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def bench_context_view(tmp: Path, sizes: tuple[int, ...], repeats: int) -> dict[str, Any]:
    home = tmp / "home-views"
    async with await open_store(home / "threadline.db") as store:  # as the server opens it: view snapshots kept
        sessions = {}
        for n in sizes:
            t0 = time.perf_counter()
            sessions[n] = await build_session(store, str(tmp), n)
            print(f"  built a {n:,}-message session in {time.perf_counter() - t0:.1f} s", flush=True)
    # The same 100k history stored without view snapshots, as a version before schema v10 stored it.
    async with await Store.open(home / "threadline.db", estimate=estimate_message_tokens) as store:
        legacy = await build_session(store, str(tmp), sizes[-1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    env["THREADLINE_HOME"] = str(home)
    client = await Client.spawn(env=env, args=[sys.executable, "-m", "server"], cwd=str(REPO))
    out: dict[str, Any] = {"sizes": {}}
    try:
        for n in sizes:
            params = {"sessionId": sessions[n], "contextWindowTokens": 32_000}
            t0 = time.perf_counter()
            first = await client.request("getContextView", params)
            cold = time.perf_counter() - t0
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                await client.request("getContextView", params)
                times.append(time.perf_counter() - t0)
            out["sizes"][n] = {
                "cold_ms": cold * 1000,
                "median_ms": statistics.median(times) * 1000,
                "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))] * 1000,
                "mode": first["mode"],
                "view_messages": len(first["messages"]),
                "transcript_messages": first["transcriptMessages"],
            }
            print(f"  getContextView at {n:,}: median {out['sizes'][n]['median_ms']:.2f} ms", flush=True)
        out["rss_all_mb"] = _rss_mb(client.proc.pid)
        t0 = time.perf_counter()
        await client.request("getContextView", {"sessionId": legacy, "contextWindowTokens": 32_000})
        out["legacy_cold_ms"] = (time.perf_counter() - t0) * 1000
    finally:
        await client.close()
    params = {"sessionId": sessions[sizes[-1]], "contextWindowTokens": 32_000}
    # A restart while the 100k session still has no stored compaction: the first server's cold view saved where
    # its tail starts (a resume point), so this one reads only what follows it.
    client = await Client.spawn(env=env, args=[sys.executable, "-m", "server"], cwd=str(REPO))
    try:
        out["rss_idle_mb"] = _rss_mb(client.proc.pid)
        restarted = await _first_views(client, params)
        out["restart_uncompacted_ms"], out["restart_uncompacted_mode"], out["rss_uncompacted_mb"] = restarted
        # The session then gets a stored compaction, as any session the agent loop has run on has (here made on
        # request, compactSession), so the restart below measures the cold start of B-CACHE-3.
        out["compaction"] = await client.request("compactSession", {"sessionId": sessions[sizes[-1]]})
    finally:
        await client.close()
    # The memory target is about one 100k-message session: a fresh server that builds only its views.
    client = await Client.spawn(env=env, args=[sys.executable, "-m", "server"], cwd=str(REPO))
    try:
        out["restart_cold_ms"], out["restart_mode"], out["rss_mb"] = await _first_views(client, params)
    finally:
        await client.close()
    out["import"] = await bench_import(tmp, env, sizes[1])
    return out


async def bench_import(tmp: Path, env: dict[str, str], count: int) -> dict[str, Any]:
    """``importSession`` of ``count`` messages (one request), then the first getContextView on that server and
    on a fresh one: the import reads the history into its view state once, so neither reads it again."""
    source = _source_messages()
    messages = []
    for i in range(count):
        msg, cycle = source[i % len(source)], i // len(source)
        calls = [dict(c, id=f"{c['id']}_{cycle}") for c in msg.get("tool_calls") or []] or None
        call_id = f"{msg['tool_call_id']}_{cycle}" if msg.get("tool_call_id") else None
        messages.append({k: v for k, v in dict(msg, tool_calls=calls, tool_call_id=call_id).items() if v})
    out: dict[str, Any] = {"messages": count}
    for restart in (False, True):
        client = await Client.spawn(env=env, args=[sys.executable, "-m", "server"], cwd=str(REPO))
        try:
            if not restart:
                t0 = time.perf_counter()
                sid = (await client.request("importSession", {"cwd": str(tmp), "messages": messages}))["sessionId"]
                out["import_ms"] = (time.perf_counter() - t0) * 1000
            params = {"sessionId": sid, "contextWindowTokens": 32_000}
            key = "restart_first_ms" if restart else "first_ms"
            out[key], out["mode"], _ = await _first_views(client, params)
        finally:
            await client.close()
    return out


async def _first_views(client: Client, params: dict[str, Any]) -> tuple[float, str, float]:
    """A fresh server's first getContextView (ms), its mode, and the server's RSS after two more."""
    t0 = time.perf_counter()
    first = await client.request("getContextView", params)
    cold_ms = (time.perf_counter() - t0) * 1000
    for _ in range(2):
        await client.request("getContextView", params)
    return cold_ms, first["mode"], _rss_mb(client.proc.pid)


# --- 2: server overhead per model iteration ------------------------------------------------------------


class InstantProvider:
    """Answers at once: a read_file call each time, then a final answer."""

    model = "instant"

    def __init__(self, iterations: int):
        self.left = iterations
        self.stamps: list[float] = []

    async def stream_chat(self, messages, tools, on_event, **_options) -> ChatResult:
        self.stamps.append(time.perf_counter())
        self.left -= 1
        if self.left <= 0:
            return ChatResult(content="done")
        call = ToolCall(f"call_{self.left}", "read_file", json.dumps({"path": "README.md"}))
        return ChatResult(content="", tool_calls=[call])


async def bench_iteration_overhead(tmp: Path, iterations: int) -> dict[str, Any]:
    home = tmp / "home-loop"
    async with await open_store(home / "threadline.db") as store:
        sid = await build_session(store, str(tmp), 1_000)
        settings = Settings(home=home, approval_policy="auto")
        provider = InstantProvider(iterations)

        async def instant_tool(ctx, name, args) -> ToolOutcome:
            return ToolOutcome("line 1\nline 2\n" * 20)

        turn_id = "turn_bench"
        tools = ToolContext(
            sid, turn_id, tmp, settings.tool_settings(), store, ArtifactStore(home / "artifacts", store)
        )
        views = ViewBuilder(store, ViewSettings(128_000), provider.model, {}, overhead_tokens=tool_reserve_tokens())
        turn = Turn(
            store=store,
            provider=provider,
            tools=tools,
            approvals=Approvals(store, None, "auto", set()),
            emit=Emitter(lambda method, params: None, sid, turn_id),
            views=views,
            max_iterations=iterations + 1,
            totals=TurnTotals(),
            run_tool=instant_tool,
            turn_id=turn_id,
        )
        t0 = time.perf_counter()
        result = await turn.run("benchmark the loop", None)
        total = time.perf_counter() - t0
    gaps = [(b - a) * 1000 for a, b in zip(provider.stamps, provider.stamps[1:])]
    return {
        "iterations": len(provider.stamps),
        "stop": result.stop_reason,
        "median_ms": statistics.median(gaps),
        "p90_ms": sorted(gaps)[int(0.9 * (len(gaps) - 1))],
        "first_ms": gaps[0],
        "total_s": total,
        "window": 128_000,
    }


# --- 4: tokens and what stays in view ---------------------------------------------------------------------
