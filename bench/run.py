"""Threadline benchmarks: one command writes bench/RESULTS.md and bench/*.svg.

    .venv/bin/python bench/run.py [--quick]
    .venv/bin/python bench/run.py --only overhead   # or views (printed as JSON), or cost: one section, no file

1. getContextView warm latency at 1k, 10k and 100k stored messages (real server, real JSON-RPC).
2. Server overhead per model iteration beyond provider time (instant provider, 1k-message session, real loop).
3. Server RSS after building views on the 100k-message session.
4. Tokens: every shared trajectory replayed at 16k, 32k and 64k windows, against naive resend and observation
   masking (keep the latest 10 tool observations, mask older ones), with what each keeps in view; and the
   precision and informativeness of the summary's failure lines, before and after B-SUM-10 (bench/failures.py).
5. The token estimator's accuracy (bench/estimator/RESULTS.md).
8. Responsiveness under load: bench/load_bench.py (its own command, ~2 minutes a run) writes bench/LOAD.md and
   bench/load.json; RESULTS.md shows that run's table.
7. ``threadline exec``'s start against the floor (bench/exec_start.py), and getContextView's figures against a
   provider counting differently (bench/calibration.py), with section 2's overhead against its target.
6. Cost under a prompt-prefix cache at 16k, 32k and 128k: naive resend, Threadline before (b10667b, read from git
   history by bench/legacy.py), Threadline now (the requests `threadline replay --requests-out` records) and a
   codex-style baseline. A shallow clone lacks b10667b: the bench then stops at once and says `git fetch --unshallow`.

    .venv/bin/python bench/run.py --only cost [--windows 16000,32000]
    .venv/bin/python bench/run.py --only failures      # section 4's failure lines, printed (seconds)
    .venv/bin/python bench/run.py --keep-latency       # sections 4-6 measured again, 1-3 from results.json

runs section 6 alone and prints it (to check a policy change) without touching RESULTS.md or results.json;
bench/offline.py gives the same figures in about a minute a window.

Benchmarks are not tests: figures live in RESULTS.md. Sessions are built through the store's own API.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from bench.budget import NOTES as BUDGET_NOTES
from bench.budget_report import budget_section
from bench.calibration import bench_calibration
from bench.common import BENCH, SIZES, TRAJECTORIES, WINDOWS
from bench.cost import COST_WINDOWS, bench_costs
from bench.exec_start import measure as bench_exec_start
from bench.failures import bench_failures, failure_section
from bench.legacy import LegacyUnavailable, require_legacy
from bench.load_bench import results_section as load_section
from bench.perf import bench_context_view, bench_iteration_overhead
from bench.report import cost_section, write_plots, write_results
from bench.startup_report import startup_section
from bench.tokens import bench_tokens


def _int_keys(value):
    """results.json has string keys where the run had numbers (sizes, windows)."""
    if isinstance(value, dict):
        return {int(k) if isinstance(k, str) and k.isdigit() else k: _int_keys(v) for k, v in value.items()}
    return value


def _kept_latency(text: str) -> str:
    """RESULTS.md of a ``--keep-latency`` run says which sections it measured."""
    return text.replace(
        "All ratios below come from this one run.",
        "Sections 1-3 come from the previous full run (results.json, `--keep-latency`); sections 4-6 from this one.",
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs, for trying the script out")
    parser.add_argument("--from-json", action="store_true", help="rewrite RESULTS.md and plots from results.json")
    parser.add_argument(
        "--only",
        choices=["cost", "views", "overhead", "failures"],
        help="run one section (6: cost, 1+3: views, 2: overhead) and print it; RESULTS.md is kept",
    )
    parser.add_argument("--windows", help="with --only cost: comma-separated windows (default 16000,32000,128000)")
    parser.add_argument(
        "--keep-latency", action="store_true", help="sections 1-3 from results.json; measure 4-6 again (pipeline work)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.only in (None, "cost", "failures") and not args.from_json:
        try:
            require_legacy()  # before minutes of other sections: section 6's "before" is read from git history
        except LegacyUnavailable as err:
            print(f"bench/run.py: {err}", file=sys.stderr)
            return 2
    if args.only == "cost":
        windows = tuple(int(w) for w in args.windows.split(",")) if args.windows else COST_WINDOWS
        costs = bench_costs(sorted(TRAJECTORIES.glob("*.json")), windows)
        print("\n".join(cost_section(costs, time.perf_counter() - started)))
        return 0
    if args.only == "failures":
        print("\n".join(failure_section(bench_failures(sorted(TRAJECTORIES.glob("*.json"))))))
        return 0
    if args.only:
        with tempfile.TemporaryDirectory(prefix="threadline-bench-") as tmp:
            if args.only == "views":
                only = await bench_context_view(Path(tmp), SIZES, 10 if args.quick else 50)
            else:
                only = await bench_iteration_overhead(Path(tmp), 50 if args.quick else 200)
        print(json.dumps(only, indent=1, default=str))
        return 0
    if args.from_json:
        saved = _int_keys(json.loads((BENCH / "results.json").read_text(encoding="utf-8")))
        text = write_results(
            saved["views"],
            saved["loop"],
            saved["tokens"],
            saved.get("costs", {}),
            started - saved.get("seconds", 0),
            saved.get("cost_seconds", 0),
            saved.get("failures"),
        )
        if "start" in saved:
            text += "\n" + "\n".join(startup_section(saved["start"], saved["loop"], saved["calibration"]))
        text += "\n" + "\n".join(load_section()) + "\n"
        text += "\n" + "\n".join(budget_section(BUDGET_NOTES))  # section 9: bench.budget writes its JSON
        (BENCH / "RESULTS.md").write_text(_kept_latency(text) if saved.get("kept_latency") else text, encoding="utf-8")
        write_plots(saved["views"], saved["tokens"])
        return 0
    files = sorted(TRAJECTORIES.glob("*.json"))
    if args.keep_latency:
        saved = _int_keys(json.loads((BENCH / "results.json").read_text(encoding="utf-8")))
        views, loop = saved["views"], saved["loop"]
    else:
        with tempfile.TemporaryDirectory(prefix="threadline-bench-") as tmp:
            print("1/3 getContextView latency and RSS", flush=True)
            views = await bench_context_view(Path(tmp), SIZES, 10 if args.quick else 50)
            print("2 server overhead per model iteration", flush=True)
            loop = await bench_iteration_overhead(Path(tmp), 50 if args.quick else 200)
    print("7 exec start-up against the floor, and the calibrated figures", flush=True)
    start = bench_exec_start(3 if args.quick else 5)
    calibration = await bench_calibration()
    print("4 tokens: replaying every trajectory at every window", flush=True)
    tokens = await bench_tokens(files[:1] if args.quick else files, WINDOWS[:1] if args.quick else WINDOWS)
    failures = bench_failures(files)
    print("6 cost under a prefix cache: every trajectory at 16k, 32k and 128k, two replays at a time", flush=True)
    cost_started = time.perf_counter()
    costs = bench_costs(files[:1] if args.quick else files, COST_WINDOWS[:1] if args.quick else COST_WINDOWS)
    cost_seconds = time.perf_counter() - cost_started
    text = write_results(views, loop, tokens, costs, started, cost_seconds, failures)
    text += "\n" + "\n".join(startup_section(start, loop, calibration))
    text += "\n" + "\n".join(load_section()) + "\n"  # its own command: bench/load_bench.py
    text += "\n" + "\n".join(budget_section(BUDGET_NOTES))  # section 9: bench.budget writes its JSON
    (BENCH / "RESULTS.md").write_text(_kept_latency(text) if args.keep_latency else text, encoding="utf-8")
    write_plots(views, tokens)
    (BENCH / "results.json").write_text(
        json.dumps(
            {
                "views": views,
                "loop": loop,
                "tokens": tokens,
                "costs": costs,
                "cost_seconds": cost_seconds,
                "failures": failures,
                "start": start,
                "calibration": calibration,
                "kept_latency": args.keep_latency,
                "seconds": time.perf_counter() - started,
            },
            indent=1,
            default=str,
        ),
        encoding="utf-8",
    )
    print(f"wrote {BENCH / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
