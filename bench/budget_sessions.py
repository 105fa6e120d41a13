"""The context budget (B-BUDGET-1) on recorded sessions: cost at 128k and 1M against a codex-style anchor, what stays
in view (goals, paths, failures) and the fidelity guard.

    .venv/bin/python -m bench.budget_sessions [--windows 128000,1000000] [--json OUT]

Each shared trajectory (data/trajectories) is replayed through the real server (``bench.cost``: the recorded
answers, one model call before each), and every strategy's requests are priced by ``bench.cost.Meter`` (a prefix
cache at 0.1x, OpenAI-like). The fidelity guard: of the recorded assistant messages that quote an earlier tool
output (``QUOTE`` characters or more, verbatim, in their text or call arguments), how many were answered from a
request in which that quote was nowhere (its output cleared). The model's answers are the recorded ones, so the
guard measures what a model would have had to go without, not what it did.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import REPO
from bench.cost import _now_requests, analyse_costs
from server.cli.replay_run import replay_file
from server.context.micro import content_text

WINDOWS = (128_000, 1_000_000)
QUOTE = 60
_PROBE = 40  # anchors of this length every _STRIDE characters of each output find every quote of QUOTE or more
_STRIDE = 20
_MAX_ANSWER_CHARS = 200_000


def _answer_text(msg: dict[str, Any]) -> str:
    calls = " ".join(str((c.get("function") or {}).get("arguments", "")) for c in msg.get("tool_calls") or ())
    return (content_text(msg.get("content")) + "\n" + calls)[:_MAX_ANSWER_CHARS]


class Quotes:
    """Finds, for an answer, the longest verbatim stretch it shares with each earlier tool output."""

    def __init__(self) -> None:
        self.outputs: list[str] = []
        self.anchors: dict[str, list[tuple[int, int]]] = {}  # probe -> (output, position)

    def add_output(self, text: str) -> None:
        n = len(self.outputs)
        self.outputs.append(text)
        for p in range(0, len(text) - _PROBE + 1, _STRIDE):
            self.anchors.setdefault(text[p : p + _PROBE], []).append((n, p))

    def quotes(self, answer: str) -> list[str]:
        """The stretches of ``answer`` (QUOTE characters or more) found verbatim in an earlier output."""
        found: dict[int, str] = {}
        for a in range(0, len(answer) - _PROBE + 1):
            for n, p in self.anchors.get(answer[a : a + _PROBE], ()):
                text = self.outputs[n]
                left = 0
                while a - left > 0 and p - left > 0 and answer[a - left - 1] == text[p - left - 1]:
                    left += 1
                right = _PROBE
                while a + right < len(answer) and p + right < len(text) and answer[a + right] == text[p + right]:
                    right += 1
                if left + right >= QUOTE and len(found.get(n, "")) < left + right:
                    found[n] = answer[a - left : a + right]
        return list(found.values())


def fidelity(
    transcript: list[dict[str, Any]], uptos: list[int], requests: list[list[dict[str, Any]]]
) -> dict[str, int]:
    """Quoting answers, and those whose request lacked a stretch they quote (see the module doc)."""
    quotes = Quotes()
    fed = 0
    quoting = lacking = 0
    for upto, request in zip(uptos, requests, strict=True):
        for msg in transcript[fed:upto]:
            if msg.get("role") == "tool":
                quotes.add_output(content_text(msg.get("content")))
        fed = max(fed, upto)
        if upto >= len(transcript) or transcript[upto].get("role") != "assistant":
            continue
        stretches = quotes.quotes(_answer_text(transcript[upto]))
        if not stretches:
            continue
        quoting += 1
        sent = "\n".join(content_text(m.get("content")) for m in request)
        lacking += any(s not in sent for s in stretches)
    return {"quoting": quoting, "lacking": lacking}


async def _one(path: Path, window: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="threadline-budget-") as tmp:
        out = Path(tmp) / "requests.jsonl"
        report = await replay_file(path, window, requests_out=out)
        steps = [(s.turn, s.transcript_seq) for s in report.steps]
        result = analyse_costs(report.transcript, steps, out, window)
        uptos = [min(upto, len(report.transcript)) for _, upto in steps]
        result["fidelity"] = fidelity(report.transcript, uptos, list(_now_requests(out)))
    result["errors"] = report.errors
    return result


def _run_one(args: tuple[Path, int]) -> tuple[str, int, dict[str, Any]]:
    path, window = args
    return path.stem.split("__")[0], window, asyncio.run(_one(path, window))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    files = sorted((REPO / "data" / "trajectories").glob("*.json"))
    jobs = [(f, int(w)) for f in files for w in args.windows.split(",")]
    rows: dict[str, dict[int, dict[str, Any]]] = {}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for name, window, result in pool.map(_run_one, jobs):
            rows.setdefault(name, {})[window] = result
            s = result["strategies"]
            now, codex = s["now"]["cost"]["openai"], s["codex"]["cost"]["openai"]
            kept = {k: f"{s['now']['kept'][k]}/{result['total'][k]}" for k in result["total"]}
            f = result["fidelity"]
            print(
                f"{name:<24} {window:>9,}  now {now:>10,}  codex-style {codex:>10,}  {now / codex:.2f}x  "
                f"kept {kept}  quoting {f['quoting']} lacking {f['lacking']}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
