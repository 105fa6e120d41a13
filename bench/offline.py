"""Cost section 6 offline, for tuning the policy in seconds instead of a ten-minute server replay.

    .venv/bin/python bench/offline.py [--windows 16000,32000,128000] [--only NAME] [--breakdown]

The first run replays every shared trajectory once through the real server (``threadline replay``) and keeps
its stored transcript and model calls in ``bench/.cache/`` (the transcript and the calls do not depend on the
window or the policy: the recorded assistant messages drive the loop). "Threadline now" is then rebuilt per call
with the production pipeline exactly as the loop builds it (``IncrementalView`` + ``fit_to_window``, the
compaction carried from call to call, as ``bench/tokens.py`` does and checks against the server's figures), and
priced with ``bench/cost.py``'s meters; naive, "before" and codex-style do not change with the policy and are
cached per trajectory and window. Figures are the same as section 6's up to the requests-out detail that the
server's requests are clipped by the loop (they agree when no fallback is taken).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from bench.common import BENCH, TRAJECTORIES
from bench.cost import COST_WINDOWS, PRICES, Meter, Retention, _sent, codex_requests, keyed
from bench.legacy import LegacyUnavailable, legacy_requests, require_legacy
from bench.tokens import _view_text, replay_tool_overhead_tokens
from server.cli.replay_run import replay_file
from server.context import ViewSettings, fit_to_window
from server.context.incremental import IncrementalView

CACHE = BENCH / ".cache"
OVERRIDES: dict[str, float] = {}  # ViewSettings fields to try (--set)


async def _capture(path: Path) -> dict[str, Any]:
    out = CACHE / f"{path.stem}.replay.json"
    if out.exists():
        return json.loads(out.read_text(encoding="utf-8"))
    report = await replay_file(path, COST_WINDOWS[0])
    data = {"transcript": report.transcript, "steps": [(s.turn, s.transcript_seq) for s in report.steps]}
    CACHE.mkdir(exist_ok=True)
    out.write_text(json.dumps(data), encoding="utf-8")
    return data


def _baselines(
    name: str, transcript: list[dict[str, Any]], steps: list[tuple[int, int]], window: int
) -> dict[str, Any]:
    """naive, before and codex-style for one trajectory and window (cached: none depends on the policy)."""
    out = CACHE / f"{name}.{window}.baselines.json"
    if out.exists():
        return json.loads(out.read_text(encoding="utf-8"))
    usable = window - replay_tool_overhead_tokens()
    sent = [_sent(m) for m in transcript]
    keys = keyed(sent)
    uptos = [min(upto, len(transcript)) for _, upto in steps]
    meters = {n: Meter(usable) for n in ("naive", "before", "codex")}
    kept = {n: Retention(transcript) for n in ("before", "codex")}
    codex = codex_requests(sent, keys, uptos, usable, meters["codex"])
    for upto, before_msgs in zip(uptos, legacy_requests(transcript, steps, usable), strict=True):
        meters["naive"].add(keys[:upto])
        meters["before"].add(keyed(before_msgs))
        indices, codex_keys = next(codex)
        meters["codex"].add(codex_keys)
        kept["before"].add(upto, _view_text(before_msgs))
        kept["codex"].add(upto, _view_text([sent[i] for i in indices]))
    result = {n: {**m.result(), "exact": {p: m.cost(p) for p in PRICES}} for n, m in meters.items()}
    for n, retention in kept.items():
        result[n]["kept"] = retention.kept
    result["total"] = kept["before"].total
    out.write_text(json.dumps(result), encoding="utf-8")
    return result


def now_requests(transcript: list[dict[str, Any]], steps: list[tuple[int, int]], window: int):
    """What the loop sends at each call (the production pipeline, compaction carried across calls)."""
    settings = ViewSettings(window - replay_tool_overhead_tokens(), **OVERRIDES)  # type: ignore[arg-type]
    state, compaction = IncrementalView(), None
    for _, upto in steps:
        upto = min(upto, len(transcript))
        state.feed(transcript[state.fed : upto])
        view = fit_to_window(state.view(settings, compaction))
        compaction = view.compaction or compaction
        yield upto, view


def evaluate(transcript, steps, window: int, breakdown: bool = False) -> dict[str, Any]:
    meter, kept = Meter(window - replay_tool_overhead_tokens()), Retention(transcript)
    causes: dict[str, int] = {}
    for upto, view in now_requests(transcript, steps, window):
        request = keyed([_sent(m) for m in view.messages])
        cached = meter.add(request)
        uncached = sum(t for _, t in request) - cached
        cause = "append" if view.sticky or view.mode == "full" else view.mode
        causes[cause] = causes.get(cause, 0) + uncached
        causes[f"{cause} calls"] = causes.get(f"{cause} calls", 0) + 1
        kept.add(upto, _view_text(view.messages))
    result = {**meter.result(), "exact": {p: meter.cost(p) for p in PRICES}, "kept": kept.kept}
    if breakdown:
        result["causes"] = causes
    return result


def _pct(kept: dict[str, int], total: dict[str, int], kind: str) -> str:
    return f"{100 * kept[kind] / total[kind]:.0f}%" if total[kind] else "n/a"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default=",".join(str(w) for w in COST_WINDOWS))
    parser.add_argument("--only", help="trajectories whose file name contains this")
    parser.add_argument("--breakdown", action="store_true", help="uncached tokens of 'now' by cause")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="try a setting: a ViewSettings field or a constant of server.context.incremental or .compacted",
    )
    args = parser.parse_args()
    try:
        require_legacy()  # before any replay: "before" is read from git history
    except LegacyUnavailable as err:
        print(f"bench/offline.py: {err}", file=sys.stderr)
        return 2
    for item in args.set:
        name, _, value = item.partition("=")
        if name in ViewSettings.__dataclass_fields__:
            OVERRIDES[name] = float(value)
        else:
            import server.context.compacted as compacted
            import server.context.incremental as incremental

            # The view pipeline's constants are read by the module that uses them (the fallback window's by
            # compacted, the freed ratios by incremental): set the name where it is read.
            for module in [m for m in (incremental, compacted) if hasattr(m, name)] or [incremental]:
                setattr(module, name, float(value))
    windows = [int(w) for w in args.windows.split(",")]
    files = [p for p in sorted(TRAJECTORIES.glob("*.json")) if not args.only or args.only in p.name]
    t0 = time.perf_counter()
    data = {p.stem: await _capture(p) for p in files}
    for window in windows:
        pooled: dict[str, dict[str, float]] = {}
        for name, d in data.items():
            steps = [tuple(s) for s in d["steps"]]
            base = _baselines(name, d["transcript"], steps, window)
            now = evaluate(d["transcript"], steps, window, args.breakdown)
            total = base["total"]
            for strategy, r in (
                ("naive", base["naive"]),
                ("before", base["before"]),
                ("now", now),
                ("codex", base["codex"]),
            ):
                for model in PRICES:
                    pooled.setdefault(strategy, {}).setdefault(model, 0.0)
                    pooled[strategy][model] += r["exact"][model]
            line = "  ".join(
                f"{s} f{_pct(r['kept'], total, 'failures')} g{_pct(r['kept'], total, 'goals')} "
                f"p{_pct(r['kept'], total, 'paths')}"
                for s, r in (("before", base["before"]), ("now", now))
            )
            print(
                f"{window:>6} {name[:24]:24} now/before {now['exact']['anthropic'] / base['before']['exact']['anthropic']:.3f}"
                f" breaks {now['breaks']:3}  over {now['over_window']}  {line}"
            )
            if args.breakdown:
                print("        ", {k: v for k, v in now["causes"].items()})
        naive = pooled["naive"]
        figures = "  ".join(
            f"{model}: before {pooled['before'][model] / naive[model]:.4f} now "
            f"{pooled['now'][model] / naive[model]:.4f} (half-before "
            f"{pooled['before'][model] / naive[model] / 2:.4f}) codex "
            f"{pooled['codex'][model] / naive[model]:.4f}"
            for model in PRICES
        )
        print(f"{window:>6} POOLED {figures}", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
