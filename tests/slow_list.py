"""The quick loop's slow list (``tests/slow_tests.txt``), made from a measured run rather than by folder (issue 53).

    .venv/bin/python -m pytest -p no:randomly -q --durations=0 [-m "not slow"] > durations.txt
    .venv/bin/python -m tests.slow_list durations.txt [--threshold 2.0]

A test is slow when its setup, call and teardown took ``--threshold`` seconds or more together in that run. The
list keeps its whole-folder and whole-file entries (``tests/e2e/``, ``tests/cli/test_eval.py``: slow, not measured)
except those the run measured a test under, and replaces every measured entry. ``tests/conftest.py`` reads it.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

LIST = Path(__file__).resolve().parent / "slow_tests.txt"
LINE = re.compile(r"^\s*([\d.]+)s (?:setup|call|teardown)\s+(tests/\S.*?)\s*$")


def measured(report: str) -> dict[str, float]:
    """Each test's seconds (setup + call + teardown) in a ``--durations=0`` report."""
    seconds: defaultdict[str, float] = defaultdict(float)
    for line in report.split("slowest durations", 1)[-1].splitlines():
        found = LINE.match(line)
        if found:
            seconds[found.group(2)] += float(found.group(1))
    return dict(seconds)


def entries(text: str) -> list[str]:
    """The list's entries: one a line, ``#`` comments and blank lines left out."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def is_whole(entry: str) -> bool:
    """A folder or a file (everything in it is slow), not one test."""
    return "::" not in entry


def render(seconds: dict[str, float], kept: list[str], threshold: float, source: str) -> str:
    slow = sorted(t for t, s in seconds.items() if s >= threshold)
    quick = sum(s for s in seconds.values() if s < threshold)
    return "\n".join(
        [
            "# Tests left out of the quick loop (bash tests/run.sh --quick), read by tests/conftest.py.",
            f"# Made by `python -m tests.slow_list {source} --threshold {threshold}` (tests/slow_list.py) from a",
            "# `pytest -p no:randomly -q --durations=0` run; edit by running it again, not by hand.",
            f"# Measured: {len(seconds)} tests; {len(slow)} took {threshold} s or more (setup + call + teardown);",
            f"# the others {quick:.0f} s together in that run.",
            "#",
            "# Whole folders and files: slow, not measured by that run (the next run that measures them replaces them).",
            *kept,
            "#",
            "# Measured slow:",
            *slow,
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("durations", type=Path, help="the output of a pytest run with --durations=0")
    parser.add_argument("--threshold", type=float, default=2.0, help="seconds from which a test is slow")
    args = parser.parse_args(argv)
    seconds = measured(args.durations.read_text(encoding="utf-8"))
    if not seconds:
        print(f"{args.durations}: no durations found (run pytest with --durations=0)", file=sys.stderr)
        return 2
    old = entries(LIST.read_text(encoding="utf-8")) if LIST.exists() else []
    kept = [e for e in old if is_whole(e) and not any(t.startswith(e) for t in seconds)]
    LIST.write_text(render(seconds, kept, args.threshold, args.durations.name), encoding="utf-8")
    print(f"wrote {LIST}: {len(kept)} whole entries kept, {sum(s >= args.threshold for s in seconds.values())} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
