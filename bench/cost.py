"""Cost: what each request strategy pays when the provider caches prompt prefixes (SPEC section 14).

For every shared trajectory and window the trajectory is replayed once through the real server with
``--requests-out`` ("Threadline now": whatever the current pipeline sends). The replay also gives the stored
transcript and the model calls (one before each recorded assistant message), from which the other strategies'
requests are built: naive resend, the b10667b policy (``bench.legacy``, "Threadline before") and a codex-style
baseline. Every request is then priced the same way: its cached tokens are the tokens of the longest common
message prefix with the previous request (a prefix cache), the rest is uncached. Requests are streamed one at a
time; only the previous request's message keys are kept.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.legacy import legacy_requests
from bench.tokens import _trackables, _view_text, replay_tool_overhead_tokens
from server.cli.replay_run import replay_file
from server.context import estimate_message_tokens

COST_WINDOWS = (16_000, 32_000, 128_000)
STRATEGIES = ("naive", "before", "now", "codex")
PRICES = {"anthropic": (0.1, 1.25), "openai": (0.1, 1.0)}  # (cached, uncached) per input token
CODEX_TRIGGER = 0.9  # compact once a request would pass 90% of the window
CODEX_SUMMARY_TOKENS = 2_000
CODEX_OUTPUT_FACTOR = 5  # the summary is output: 5x the (uncached) input price
BREAK_RATIO = 0.5  # a request whose cached prefix is under half the previous request breaks the cache
SENT_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")  # what a provider receives of a message

Keyed = list[tuple[bytes, int]]  # per message: (hash of its exact JSON, token estimate)


def _key(msg: dict[str, Any]) -> bytes:
    text = json.dumps(msg, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def keyed(messages: Sequence[dict[str, Any]]) -> Keyed:
    return [(_key(m), estimate_message_tokens(m)) for m in messages]


class Meter:
    """Prices a stream of requests under a prefix cache; counts breaks and requests over the window."""

    def __init__(self, usable_window: int):
        self.usable_window = usable_window
        self.previous: Keyed = []
        self.previous_tokens = 0
        self.requests = self.sent = self.cached = self.breaks = self.over = 0
        self.summaries = 0  # codex-style compactions, each charged as a 2,000-token output

    def add(self, request: Keyed) -> int:
        """Account one request; returns its cached tokens."""
        tokens = sum(t for _, t in request)
        cached = 0
        for (key, t), (before, _) in zip(request, self.previous):
            if key != before:
                break
            cached += t
        if self.requests and cached < BREAK_RATIO * self.previous_tokens:
            self.breaks += 1
        self.requests += 1
        self.sent += tokens
        self.cached += cached
        self.over += tokens > self.usable_window
        self.previous, self.previous_tokens = request, tokens
        return cached

    def cost(self, model: str) -> float:
        cached_price, uncached_price = PRICES[model]
        summaries = self.summaries * CODEX_SUMMARY_TOKENS * CODEX_OUTPUT_FACTOR * uncached_price
        return self.cached * cached_price + (self.sent - self.cached) * uncached_price + summaries

    def result(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "sent": self.sent,
            "cached": self.cached,
            "breaks": self.breaks,
            "over_window": self.over,
            "summaries": self.summaries,
            "cost": {m: round(self.cost(m)) for m in PRICES},
        }


def _sent(msg: dict[str, Any]) -> dict[str, Any]:
    return {k: msg[k] for k in SENT_KEYS if k in msg}


def codex_requests(
    transcript: Sequence[dict[str, Any]], keys: Keyed, uptos: Sequence[int], usable_window: int, meter: Meter
) -> Iterator[tuple[list[int], Keyed]]:
    """Codex-style: append until 90% of the window, then system messages + one 2,000-token summary + the latest
    quarter-window of conversation (not starting at a tool result); append again. Yields (verbatim message
    indices, keyed request); the summary is a stand-in of the right size (its text is the model's)."""
    systems = [i for i, m in enumerate(transcript) if m["role"] in ("system", "developer")]
    summary: Keyed = []
    kept: list[int] = []  # transcript indices in the request after the summary
    fed = 0
    for upto in uptos:
        kept += [i for i in range(fed, upto) if transcript[i]["role"] not in ("system", "developer")]
        fed = upto
        live = [i for i in systems if i < upto]
        if (
            sum(keys[i][1] for i in live) + sum(t for _, t in summary) + sum(keys[i][1] for i in kept)
            > CODEX_TRIGGER * usable_window
        ):
            meter.summaries += 1
            summary = [(b"codex-summary-%d" % meter.summaries, CODEX_SUMMARY_TOKENS)]
            budget, start = usable_window // 4, len(kept)
            while start > 0 and budget - keys[kept[start - 1]][1] >= 0:
                start -= 1
                budget -= keys[kept[start]][1]
            while start < len(kept) and transcript[kept[start]]["role"] == "tool":
                start += 1  # a tool result without its call is not sendable
            kept = kept[start:]
        yield [*live, *kept], [*(keys[i] for i in live), *summary, *(keys[i] for i in kept)]


def _now_requests(out: Path) -> Iterator[list[dict[str, Any]]]:
    with open(out, encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)["messages"]


class Retention:
    """Goals, failures and edited paths kept in view, as bench/tokens.py counts them, summed over steps."""

    def __init__(self, transcript: list[dict[str, Any]]):
        self.track = _trackables(transcript)
        self.kept = {"goals": 0, "failures": 0, "paths": 0}
        self.total = {"goals": 0, "failures": 0, "paths": 0}

    def add(self, upto: int, text: str) -> None:
        for kind, value in self.track[:upto]:
            if kind == "goal":
                self.total["goals"] += 1
                self.kept["goals"] += value in text
            elif kind == "failure":
                self.total["failures"] += 1
                self.kept["failures"] += value in text
            elif kind == "paths":
                for path in value:
                    self.total["paths"] += 1
                    self.kept["paths"] += path in text


def analyse_costs(
    transcript: list[dict[str, Any]], steps: list[tuple[int, int]], now_out: Path, window: int
) -> dict[str, Any]:
    """Every strategy's requests for one replay, priced; ``steps`` are (user turn, transcript seq) per call."""
    usable = window - replay_tool_overhead_tokens()  # every request also carries the tool definitions (not counted)
    sent = [_sent(m) for m in transcript]
    keys = keyed(sent)
    uptos = [min(upto, len(transcript)) for _, upto in steps]
    meters = {name: Meter(usable) for name in STRATEGIES}
    kept = {name: Retention(transcript) for name in ("before", "now", "codex")}
    mismatches = 0  # requests where "now" differs from "before" (none until the pipeline changes)
    naive_prefix = []
    codex = codex_requests(sent, keys, uptos, usable, meters["codex"])
    before = legacy_requests(transcript, steps, usable)
    for upto, now_msgs, before_msgs in zip(uptos, _now_requests(now_out), before, strict=True):
        naive_prefix = keys[:upto]
        meters["naive"].add(naive_prefix)
        now_keys, before_keys = keyed(now_msgs), keyed(before_msgs)
        meters["now"].add(now_keys)
        meters["before"].add(before_keys)
        mismatches += now_keys != before_keys
        indices, codex_keys = next(codex)
        meters["codex"].add(codex_keys)
        kept["now"].add(upto, _view_text(now_msgs))
        kept["before"].add(upto, _view_text(before_msgs))
        kept["codex"].add(upto, _view_text([sent[i] for i in indices]))
    out = {name: meter.result() for name, meter in meters.items()}
    for name, retention in kept.items():
        out[name]["kept"] = retention.kept
    total = kept["now"].total
    out["naive"]["kept"] = dict(total)  # naive keeps everything by construction
    return {"steps": len(steps), "total": total, "strategies": out, "now_vs_before_mismatches": mismatches}


async def _one(path: Path, window: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="threadline-cost-") as tmp:
        out = Path(tmp) / "requests.jsonl"
        report = await replay_file(path, window, requests_out=out)
        steps = [(s.turn, s.transcript_seq) for s in report.steps]
        result = analyse_costs(report.transcript, steps, out, window)
    result["errors"] = report.errors
    result["seconds"] = time.perf_counter() - t0
    return result


def _run_one(args: tuple[Path, int]) -> tuple[str, int, dict[str, Any]]:
    import asyncio

    path, window = args
    return path.name, window, asyncio.run(_one(path, window))


def bench_costs(
    files: list[Path], windows: tuple[int, ...] = COST_WINDOWS, workers: int = 2
) -> dict[str, dict[int, dict[str, Any]]]:
    """Every trajectory at every window, ``workers`` replays at a time (each replay is its own server)."""
    jobs = [(path, window) for path in files for window in windows]
    out: dict[str, dict[int, dict[str, Any]]] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for name, window, result in pool.map(_run_one, jobs):
            out.setdefault(name, {})[window] = result
            s = result["strategies"]
            print(
                f"  {name} at {window:,}: cost vs naive (anthropic) before "
                f"{s['before']['cost']['anthropic'] / s['naive']['cost']['anthropic']:.2f}, now "
                f"{s['now']['cost']['anthropic'] / s['naive']['cost']['anthropic']:.2f}, codex "
                f"{s['codex']['cost']['anthropic'] / s['naive']['cost']['anthropic']:.2f} "
                f"({result['seconds']:.0f} s)",
                flush=True,
            )
    return {name: dict(sorted(per.items())) for name, per in sorted(out.items())}


def pooled(costs: dict[str, dict[int, dict[str, Any]]], window: int, strategy: str, model: str) -> float:
    """Sum over trajectories of the strategy's cost, over the same sum for naive resend."""
    num = sum(per[window]["strategies"][strategy]["cost"][model] for per in costs.values() if window in per)
    den = sum(per[window]["strategies"]["naive"]["cost"][model] for per in costs.values() if window in per)
    return num / den if den else float("nan")
