"""Threadline benchmarks: one command writes bench/RESULTS.md and bench/*.png.

    .venv/bin/python bench/run.py [--quick]

1. getContextView warm latency at 1k, 10k and 100k stored messages (real server, real JSON-RPC).
2. Server overhead per model iteration beyond provider time (instant provider, 1k-message session, real loop).
3. Server RSS after building views on the 100k-message session.
4. Tokens: every shared trajectory replayed at 16k, 32k and 64k windows, against naive resend and observation
   masking (keep the latest 10 tool observations, mask older ones), with what each keeps in view.
5. The token estimator's accuracy (bench/estimator/RESULTS.md).

Benchmarks are not tests: figures live in RESULTS.md. Sessions are built through the store's own API.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from server.agent.approvals import Approvals  # noqa: E402
from server.agent.emit import Emitter  # noqa: E402
from server.agent.loop import Turn, TurnTotals  # noqa: E402
from server.agent.service import tool_overhead_tokens  # noqa: E402
from server.agent.views import ViewBuilder  # noqa: E402
from server.artifacts import ArtifactStore  # noqa: E402
from server.client import Client  # noqa: E402
from server.config import Settings  # noqa: E402
from server.context import ViewSettings, estimate_message_tokens, write_paths  # noqa: E402
from server.context.incremental import IncrementalView  # noqa: E402
from server.context.micro import content_text, evidence_match  # noqa: E402
from server.context.summary import _failure_excerpt, _one_line  # noqa: E402
from server.plot import BLUE, GRAY, GREEN, ORANGE, BarChart  # noqa: E402
from server.providers import ChatResult, ToolCall  # noqa: E402
from server.replay_run import replay_file  # noqa: E402
from server.tools import ToolContext, ToolOutcome  # noqa: E402
from server.transcript import NewMessage, Store  # noqa: E402

BENCH = REPO / "bench"
TRAJECTORIES = Path(os.environ.get("THREADLINE_TRAJECTORIES", REPO.parent / "shared" / "data" / "trajectories"))
SIZES = (1_000, 10_000, 100_000)
WINDOWS = (16_000, 32_000, 64_000)
MASK_KEEP = 10
MASK_TEXT = "[old tool output omitted]"


# --- sessions of any size, built through the store's API --------------------------------------------------


def _source_messages() -> list[dict[str, Any]]:
    """Real messages to cycle through: the kimi-cli and mini-swe-agent trajectories."""
    out = []
    for name in ("kimi-cli-entire__29_77bc73228c_1__full.json",
                 "mini-swe-agent-pr816__deepseek_chat_dev_rerun__pylint-dev__astroid-1333.json"):
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
    store = await Store.open(home / "threadline.db", estimate=estimate_message_tokens)
    sessions = {}
    for n in sizes:
        t0 = time.perf_counter()
        sessions[n] = await build_session(store, str(tmp), n)
        print(f"  built a {n:,}-message session in {time.perf_counter() - t0:.1f} s", flush=True)
    await store.close()
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
            out["sizes"][n] = {"cold_ms": cold * 1000, "median_ms": statistics.median(times) * 1000,
                               "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))] * 1000,
                               "mode": first["mode"], "view_messages": len(first["messages"]),
                               "transcript_messages": first["transcriptMessages"]}
            print(f"  getContextView at {n:,}: median {out['sizes'][n]['median_ms']:.2f} ms", flush=True)
        out["rss_all_mb"] = _rss_mb(client.proc.pid)
    finally:
        await client.close()
    # The memory target is about one 100k-message session: a fresh server that builds only its views.
    client = await Client.spawn(env=env, args=[sys.executable, "-m", "server"], cwd=str(REPO))
    try:
        out["rss_idle_mb"] = _rss_mb(client.proc.pid)
        for _ in range(3):
            await client.request("getContextView", {"sessionId": sessions[sizes[-1]], "contextWindowTokens": 32_000})
        out["rss_mb"] = _rss_mb(client.proc.pid)
    finally:
        await client.close()
    return out


# --- 2: server overhead per model iteration ------------------------------------------------------------


class InstantProvider:
    """Answers at once: a read_file call each time, then a final answer."""

    model = "instant"

    def __init__(self, iterations: int):
        self.left = iterations
        self.stamps: list[float] = []

    async def stream_chat(self, messages, tools, on_event) -> ChatResult:
        self.stamps.append(time.perf_counter())
        self.left -= 1
        if self.left <= 0:
            return ChatResult(content="done")
        call = ToolCall(f"call_{self.left}", "read_file", json.dumps({"path": "README.md"}))
        return ChatResult(content="", tool_calls=[call])


async def bench_iteration_overhead(tmp: Path, iterations: int) -> dict[str, Any]:
    home = tmp / "home-loop"
    store = await Store.open(home / "threadline.db", estimate=estimate_message_tokens)
    sid = await build_session(store, str(tmp), 1_000)
    settings = Settings(home=home, approval_policy="auto")
    provider = InstantProvider(iterations)

    async def instant_tool(ctx, name, args) -> ToolOutcome:
        return ToolOutcome("line 1\nline 2\n" * 20)

    turn_id = "turn_bench"
    tools = ToolContext(sid, turn_id, tmp, settings, store, ArtifactStore(home / "artifacts", store))
    views = ViewBuilder(store, ViewSettings(128_000), provider.model, {}, overhead_tokens=tool_overhead_tokens())
    turn = Turn(store=store, provider=provider, tools=tools, approvals=Approvals(store, None, "auto", set()),
                emit=Emitter(lambda method, params: None, sid, turn_id), views=views,
                max_iterations=iterations + 1, totals=TurnTotals(), run_tool=instant_tool, turn_id=turn_id)
    t0 = time.perf_counter()
    result = await turn.run("benchmark the loop", None)
    total = time.perf_counter() - t0
    await store.close()
    gaps = [(b - a) * 1000 for a, b in zip(provider.stamps, provider.stamps[1:])]
    return {"iterations": len(provider.stamps), "stop": result.stop_reason, "median_ms": statistics.median(gaps),
            "p90_ms": sorted(gaps)[int(0.9 * (len(gaps) - 1))], "first_ms": gaps[0], "total_s": total,
            "window": 128_000}


# --- 4: tokens and what stays in view ---------------------------------------------------------------------


def _snippet(text: str, n: int = 50) -> str:
    return _one_line(text)[:n]


def _trackables(transcript: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Per message: ('goal', snippet) | ('failure', snippet) | ('paths', [...]) | (None, None)."""
    out: list[tuple[str, Any]] = []
    for msg in transcript:
        role = msg["role"]
        if role == "user" and _snippet(content_text(msg.get("content"))):
            out.append(("goal", _snippet(content_text(msg.get("content")))))
        elif role == "tool":
            match = evidence_match(content_text(msg.get("content")))
            out.append(("failure", _snippet(_failure_excerpt(match))) if match else (None, None))
        elif role == "assistant" and msg.get("tool_calls"):
            paths = [p for c in msg["tool_calls"] for p in write_paths(c["function"]["name"], c["function"]["arguments"])]
            out.append(("paths", paths) if paths else (None, None))
        else:
            out.append((None, None))
    return out


def _view_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        parts.append(_one_line(content_text(m.get("content"))))
        for c in m.get("tool_calls") or ():
            parts.append(c["function"]["arguments"])
    return "\n".join(parts)


def analyse_replay(report, window: int) -> dict[str, Any]:
    """Tokens and retention per approach; Threadline's views are rebuilt exactly as the loop built them."""
    transcript = report.transcript
    tokens = [estimate_message_tokens(m) for m in transcript]
    track = _trackables(transcript)
    settings = ViewSettings(window - tool_overhead_tokens())
    mask_saving = [0] * len(transcript)
    placeholder_tokens = estimate_message_tokens({"role": "tool", "content": MASK_TEXT, "tool_call_id": "call_x"})
    tool_positions: list[int] = []
    for i, m in enumerate(transcript):
        if m["role"] == "tool":
            tool_positions.append(i)
            mask_saving[i] = max(tokens[i] - placeholder_tokens, 0)
    state, anchors, turn, fed = IncrementalView(), (), None, 0
    sums = {"naive": 0, "masking": 0, "threadline": 0}
    kept = {k: {"goals": 0, "failures": 0, "paths": 0} for k in sums}
    total = {"goals": 0, "failures": 0, "paths": 0}
    over = {"naive": 0, "masking": 0, "threadline": 0}
    mismatches = 0
    prefix_tokens, tool_count, masked_saving = 0, 0, 0
    for step in report.steps:
        upto = min(step.transcript_seq, len(transcript))
        while fed < upto:
            prefix_tokens += tokens[fed]
            if transcript[fed]["role"] == "tool":
                tool_count += 1
                if tool_count > MASK_KEEP:
                    masked_saving += mask_saving[tool_positions[tool_count - MASK_KEEP - 1]]
            fed += 1
        state.feed(transcript[state.fed:upto])
        if step.turn != turn:
            anchors, turn = (), step.turn
        view = state.view(settings, anchors)
        anchors = view.anchors
        mismatches += view.estimated_tokens != step.view_tokens
        masking_tokens = prefix_tokens - masked_saving
        sums["naive"] += prefix_tokens
        sums["masking"] += masking_tokens
        sums["threadline"] += view.estimated_tokens
        for name, value in (("naive", prefix_tokens), ("masking", masking_tokens), ("threadline", view.estimated_tokens)):
            over[name] += value > window
        text = _view_text(view.messages)
        latest_tools = set(tool_positions[max(tool_count - MASK_KEEP, 0):tool_count])
        for i in range(upto):
            kind, value = track[i]
            if kind == "goal":
                total["goals"] += 1
                kept["naive"]["goals"] += 1
                kept["masking"]["goals"] += 1
                kept["threadline"]["goals"] += value in text
            elif kind == "failure":
                total["failures"] += 1
                kept["naive"]["failures"] += 1
                kept["masking"]["failures"] += i in latest_tools
                kept["threadline"]["failures"] += value in text
            elif kind == "paths":
                for path in value:
                    total["paths"] += 1
                    kept["naive"]["paths"] += 1
                    kept["masking"]["paths"] += 1
                    kept["threadline"]["paths"] += path in text
    return {"steps": len(report.steps), "tokens": sums, "kept": kept, "total": total, "over_window": over,
            "mismatches": mismatches, "compactions": report.compactions, "modes": report.modes()}


async def bench_tokens(files: list[Path], windows: tuple[int, ...]) -> dict[str, dict[int, dict[str, Any]]]:
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for path in files:
        for window in windows:
            t0 = time.perf_counter()
            report = await replay_file(path, window)
            result = analyse_replay(report, window)
            result["seconds"] = time.perf_counter() - t0
            result["errors"] = report.errors
            out.setdefault(path.name, {})[window] = result
            print(f"  {path.name} at {window:,}: {result['steps']} steps, {result['tokens']['threadline']:,} vs "
                  f"{result['tokens']['naive']:,} naive ({result['seconds']:.0f} s)", flush=True)
    return out


# --- the results file ---------------------------------------------------------------------------------------


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def write_results(views: dict, loop: dict, tokens: dict, started: float) -> str:
    sizes = views["sizes"]
    small, mid, big = (sizes[n]["median_ms"] for n in SIZES)
    ratio_10k, ratio_100k = mid / small, big / mid
    rss = views["rss_mb"]
    lines = [
        "# Threadline benchmarks",
        "",
        f"Generated by `.venv/bin/python bench/run.py` on {platform.machine()} with {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, in {time.perf_counter() - started:.0f} s. All ratios below come from "
        "this one run. The machine is small and noisy (2 cores); medians over repeated calls.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "| --- | --- | --- |",
        f"| getContextView: 10x more history costs < 1.5x | 100k/10k = {ratio_100k:.2f}x, 10k/1k = {ratio_10k:.2f}x "
        f"| {'yes' if max(ratio_100k, ratio_10k) < 1.5 else 'no'} |",
        f"| server overhead per model iteration < 10 ms median | {loop['median_ms']:.2f} ms "
        f"| {'yes' if loop['median_ms'] < 10 else 'no'} |",
        f"| server RSS after views on a 100k-message session < 300 MB | {rss:.0f} MB | {'yes' if rss < 300 else 'no'} |",
        "",
        *_not_met(ratio_100k, ratio_10k, loop["median_ms"], rss),
        "## 1. getContextView warm latency (B-INC-1)",
        "",
        "A real server over stdio; sessions built with `Store.append_messages` from real trajectory messages "
        "(kimi-cli and mini-swe-agent, cycled). `contextWindowTokens` 32,000. *Cold* is the first call, which "
        "feeds the session's whole history into its incremental state once; *warm* calls read only messages stored "
        "since (none here) and build the view from the state.",
        "",
        "| stored messages | cold (first call) | warm median | warm p90 | mode | view messages |",
        "| ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for n in SIZES:
        s = sizes[n]
        lines.append(f"| {n:,} | {s['cold_ms']:.0f} ms | {s['median_ms']:.2f} ms | {s['p90_ms']:.2f} ms | "
                     f"{s['mode']} | {s['view_messages']} |")
    lines += [
        "",
        f"Ratios: 10k/1k = {ratio_10k:.2f}x, 100k/10k = {ratio_100k:.2f}x. ![latency](latency.png)",
        "",
        "## 2. Server overhead per model iteration",
        "",
        f"The real `Turn` on a 1,000-message session with an instantly answering provider and an instant tool: "
        f"{loop['iterations']} model calls in one turn. Each iteration stores the answer and the tool result, "
        "builds the next request view and emits the notifications; the figure is the time between provider calls. "
        "The one-time load of the 1k history into the view state happens before the first call.",
        "",
        "| iterations | median | p90 | between calls 1 and 2 |",
        "| ---: | ---: | ---: | ---: |",
        f"| {loop['iterations']} | {loop['median_ms']:.2f} ms | {loop['p90_ms']:.2f} ms | {loop['first_ms']:.1f} ms |",
        "",
        "## 3. Server memory",
        "",
        f"RSS of a fresh server after building views on the 100k-message session: **{rss:.0f} MB** (the server "
        f"alone, before any session: {views['rss_idle_mb']:.0f} MB). The server of section 1, holding the 1k, 10k "
        f"and 100k sessions' states at once: {views['rss_all_mb']:.0f} MB. The incremental state keeps every "
        "repaired message of the session in memory (so full and microcompacted views, and the anchors of a "
        "running turn, never re-read the database); the message text of 100k real messages is most of it.",
        "",
        "## 4. Tokens sent and what stays in view",
        "",
        "Every shared trajectory replayed through the real server and loop (`threadline replay`) at each window. "
        "*Naive* resends the whole transcript each call. *Masking* is the observation-masking baseline of "
        "\"The Complexity Trap\" (JetBrains, 2025): the latest 10 tool observations verbatim, older ones replaced "
        f"by `{MASK_TEXT}`. *Threadline* is what the pipeline actually sent (its views are rebuilt offline from "
        "the stored transcript with the incremental builder and checked against the replay's reported sizes: "
        "mismatches column). *Over window* counts model calls whose request would not fit the window at all.",
        "",
        "Kept in view, summed over every step: a *goal* (user message) is kept when its first 50 characters are in "
        "the view; a *failure* (tool output with error evidence) when the excerpt the summary would record is; an "
        "*edited path* (write-tool target) when the path is. Naive keeps everything by construction; masking keeps "
        "every goal and path (it never masks user or assistant messages) and a failure only while it is among the "
        "latest 10 observations.",
        "",
        "| trajectory | window | steps | compactions | naive tokens | masking tokens | Threadline tokens | "
        "Threadline vs naive | over window (naive / masking / Threadline) | goals kept (masking / Threadline) | "
        "failures kept (masking / Threadline) | paths kept (masking / Threadline) | mismatches |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | ---: |",
    ]
    for name, per_window in tokens.items():
        for window, r in per_window.items():
            t, k, tot, o = r["tokens"], r["kept"], r["total"], r["over_window"]
            lines.append(
                f"| {name.split('__')[0]} | {window // 1000}k | {r['steps']} | {r['compactions']} | {t['naive']:,} | "
                f"{t['masking']:,} | {t['threadline']:,} | -{100 - 100 * t['threadline'] / t['naive']:.0f}% | "
                f"{o['naive']} / {o['masking']} / {o['threadline']} | "
                f"{_pct(k['masking']['goals'], tot['goals'])} / {_pct(k['threadline']['goals'], tot['goals'])} | "
                f"{_pct(k['masking']['failures'], tot['failures'])} / "
                f"{_pct(k['threadline']['failures'], tot['failures'])} | "
                f"{_pct(k['masking']['paths'], tot['paths'])} / {_pct(k['threadline']['paths'], tot['paths'])} | "
                f"{r['mismatches']} |")
    over = [(n.split("__")[0], w, r["over_window"]["threadline"]) for n, pw in tokens.items() for w, r in pw.items()
            if r["over_window"]["threadline"]]
    lines += ["", "Reading it: masking keeps every goal and path but drops most failures and, on long sessions, "
              "still sends requests larger than the window at most steps. Threadline sends far less and keeps "
              "failures in its summary, but the summary keeps only the latest 4 goals (R-SUM-2), which is what the "
              "goals column shows on sessions with many user messages (pi-mono has 58)."]
    if over:
        lines += ["Threadline requests over the window: " + ", ".join(f"{n} at {w // 1000}k: {c}" for n, w, c in over)
                  + ". These are fallback views (R-FALL-1: the last 6 messages verbatim) whose recent messages are "
                  "themselves huge; the fallback window does not bound tokens."]
    lines += ["", " ".join(f"![tokens at {w // 1000}k](tokens-{w // 1000}k.png)" for w in WINDOWS), ""]
    lines += ["## 5. Token estimator accuracy", "",
              "From [`bench/estimator/RESULTS.md`](estimator/RESULTS.md) (`node`-based js-tiktoken comparison; rerun "
              "with `python bench/estimator/run.py`):", ""]
    estimator = (BENCH / "estimator" / "RESULTS.md").read_text(encoding="utf-8").splitlines()
    lines += estimator[1:]
    return "\n".join(lines).rstrip() + "\n"


def _not_met(ratio_100k: float, ratio_10k: float, loop_ms: float, rss: float) -> list[str]:
    """Plain words for each target this run missed."""
    notes = []
    if max(ratio_100k, ratio_10k) >= 1.5:
        notes.append("- **Latency ratio not met.** Warm views read only new messages, so the remaining growth is "
                     "noise on a 2-core machine or the view itself growing; see the table below.")
    if loop_ms >= 10:
        notes.append("- **Per-iteration overhead not met** in this run; see section 2.")
    if rss >= 300:
        notes.append(
            f"- **Memory not met: {rss:.0f} MB against 300 MB.** The incremental state (B-INC-1) keeps each "
            "repaired message of the session in memory, and 100k real messages are about 100 M characters of "
            "text and tool-call JSON. Views stay fast; memory grows with the session. The fix is to keep only "
            "the bodies the next views can need (the tail, the summary's unfolded part) and re-read older ones "
            "from SQLite when a caller asks for a window large enough to hold them (full or microcompacted mode).")
    return [*notes, ""] if notes else []


def write_plots(views: dict, tokens: dict) -> None:
    chart = BarChart(title="getContextView warm latency", xlabel="stored messages", ylabel="ms (median)",
                     categories=[f"{n // 1000}K" for n in SIZES])
    chart.bars([views["sizes"][n]["median_ms"] for n in SIZES], BLUE, "warm median")
    (BENCH / "latency.png").write_bytes(chart.png())
    for window in WINDOWS:
        names = [n for n in tokens if window in tokens[n]]
        chart = BarChart(title=f"tokens sent over a whole replay, {window // 1000}K window", xlabel="trajectory",
                         ylabel="tokens", categories=[n.split("__")[0].split("-")[0] for n in names])
        for key, color, label in (("naive", GRAY, "naive resend"), ("masking", ORANGE, "observation masking"),
                                  ("threadline", GREEN, "threadline")):
            chart.bars([tokens[n][window]["tokens"][key] for n in names], color, label)
        (BENCH / f"tokens-{window // 1000}k.png").write_bytes(chart.png())


def _int_keys(value):
    """results.json has string keys where the run had numbers (sizes, windows)."""
    if isinstance(value, dict):
        return {int(k) if isinstance(k, str) and k.isdigit() else k: _int_keys(v) for k, v in value.items()}
    return value


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs, for trying the script out")
    parser.add_argument("--from-json", action="store_true", help="rewrite RESULTS.md and plots from results.json")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.from_json:
        saved = _int_keys(json.loads((BENCH / "results.json").read_text(encoding="utf-8")))
        (BENCH / "RESULTS.md").write_text(write_results(saved["views"], saved["loop"], saved["tokens"],
                                                        started - saved.get("seconds", 0)), encoding="utf-8")
        write_plots(saved["views"], saved["tokens"])
        return 0
    files = sorted(TRAJECTORIES.glob("*.json"))
    with tempfile.TemporaryDirectory(prefix="threadline-bench-") as tmp:
        print("1/3 getContextView latency and RSS", flush=True)
        views = await bench_context_view(Path(tmp), SIZES, 10 if args.quick else 50)
        print("2 server overhead per model iteration", flush=True)
        loop = await bench_iteration_overhead(Path(tmp), 50 if args.quick else 200)
    print("4 tokens: replaying every trajectory at every window", flush=True)
    tokens = await bench_tokens(files[:1] if args.quick else files, WINDOWS[:1] if args.quick else WINDOWS)
    (BENCH / "RESULTS.md").write_text(write_results(views, loop, tokens, started), encoding="utf-8")
    write_plots(views, tokens)
    (BENCH / "results.json").write_text(json.dumps({"views": views, "loop": loop, "tokens": tokens,
                                                    "seconds": time.perf_counter() - started}, indent=1,
                                                   default=str), encoding="utf-8")
    print(f"wrote {BENCH / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
