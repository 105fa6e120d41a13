"""``threadline eval FILE``: what the model still knows after a compaction, per strategy (bench/PROBES.md).

The recorded session is replayed through a real server on a throwaway home (``threadline replay``'s machinery, no
model, nothing stored in the user's sessions); the points are the model calls right after its first compactions.
At each point every strategy's view (``server.cli.eval_views``) gets each probe appended as a user message, the
configured model answers with no tools (``server.probe_model``, in process: the one way from this client tool
into the provider code), and the answer is scored against the expected one (``server.cli.eval_probes``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from server.cli.eval_probes import PROBES, QUESTIONS, Expected, expected_answers, judge_grade, score
from server.cli.eval_views import CodexStyle, load_requests, naive_view, points_of, system_prefix
from server.cli.replay_run import replay_file
from server.context.repair import SYSTEM_ROLES, repair_tool_pairing

if TYPE_CHECKING:
    from server.probe_model import ProbeModel

DEFAULT_CALL_TIMEOUT = 300.0  # seconds for one model call, retries included: a hung provider ends the run
GOAL_SHOWN = 200  # characters of the expected goal reported per point
MAX_ERRORS_SHOWN = 5
LEGEND = """\
legend:
  score  goal, failures, state: the share of the expected answer's key terms (paths, identifiers, 4+ letter
         words) the answer holds as whole words, case and punctuation ignored; files: the share of the changed
         paths it names. The mean over the points where the probe was scored; - when it never was.
  n      the points where something was expected (no file written or nothing failed yet: not scored there).
  goal   the expected goal is the task's first substantive request (not a bare /command or a go-ahead; a
         task given only inside tag blocks is read there); one of fewer than 3 key terms is left to the judge.
"""

STRATEGIES = ("threadline", "codex-style", "naive")
JUDGE_PROMPT = (
    "Grade an answer against the expected answer. Reply with one digit from 0 (wrong or missing) to 5 (everything "
    "expected is there and correct), nothing else.\n\nQuestion: {question}\n\nExpected:\n{expected}\n\nAnswer:\n{answer}"
)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser(
        "eval", help="ask the configured model probe questions after each compaction of a recorded session"
    )
    ev.add_argument("file", type=Path, help="an OpenAI-message JSON file, as replay and import take")
    ev.add_argument("--context-window", type=int, help="context window in tokens (default: the model's)")
    ev.add_argument("--strategy", action="append", choices=STRATEGIES, help="repeatable (default: all three)")
    group = ev.add_mutually_exclusive_group()
    group.add_argument("--points", type=int, default=3, help="probe after the first K compactions (default 3)")
    group.add_argument("--at", type=int, action="append", metavar="STEP", help="probe at this step (repeatable)")
    ev.add_argument("--model", help="a [models.NAME] from config.toml (default: [provider])")
    ev.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ev.add_argument("--out", type=Path, metavar="DIR", help="keep every probe's request and answer here")
    ev.add_argument("--judge", action="store_true", help="also ask the model to grade each answer 0-5")
    ev.add_argument("--timeout", type=float, default=DEFAULT_CALL_TIMEOUT, help="seconds per model call")
    ev.set_defaults(run=_eval)


@dataclass
class Tally:
    scores: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PROBES})
    grades: dict[str, list[int]] = field(default_factory=lambda: {p: [] for p in PROBES})
    input_tokens: int = 0
    output_tokens: int = 0
    judge_input: int = 0
    judge_output: int = 0
    judge_errors: list[str] = field(default_factory=list)  # "step-N probe: why no grade", in order


def _eval(args: argparse.Namespace) -> int:
    from server.probe_model import ModelFailed  # the provider code loads only for this command

    if args.points is not None and args.points < 1:
        print("threadline eval: --points must be at least 1", file=sys.stderr)
        return 2
    try:
        result = asyncio.run(run_eval(args))
    except ModelFailed as exc:
        print(f"threadline eval: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"threadline eval: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, sys.stdout)
    return 0


async def run_eval(args: argparse.Namespace) -> dict[str, Any]:
    from server.probe_model import open_model
    from server.recording import load_recording

    load_recording(args.file)  # a file that is no recording is said first, before the model is looked for
    model = open_model(args.model, args.timeout)
    try:
        return await _run(args, model)
    finally:
        await model.aclose()


async def _run(args: argparse.Namespace, model: ProbeModel) -> dict[str, Any]:
    window = args.context_window or model.window
    with tempfile.TemporaryDirectory(prefix="threadline-eval-") as tmp:
        out = Path(tmp) / "requests.jsonl"
        report = await replay_file(args.file, window, requests_out=out)
        if report.errors:
            raise ValueError(f"the replay failed: {report.errors[0]}")
        requests = load_requests(out)
    points = points_of([s.compacted for s in report.steps], args.points, args.at)
    if not points:
        raise ValueError(f"no compaction at a {window:,}-token window: pass a smaller --context-window, or --at")
    transcript = report.transcript
    system = system_prefix(requests[0])
    strategies = list(dict.fromkeys(args.strategy or STRATEGIES))
    tallies = {name: Tally() for name in strategies}

    async def summarize(messages: list[dict[str, Any]]) -> str:
        answer = await model.ask(messages)
        tallies["codex-style"].input_tokens += answer.input_tokens
        tallies["codex-style"].output_tokens += answer.output_tokens
        return answer.text

    codex = CodexStyle(system, window, summarize)
    goals: list[dict[str, Any]] = []
    for step in points:
        upto = transcript[: report.steps[step - 1].transcript_seq]
        expected = expected_answers(upto)
        goals.append({"step": step, "seq": expected.goal_seq, "text": expected.goal[:GOAL_SHOWN]})
        # Protocol-valid as the pipeline's views are (R-REP-1); the system prompt is the first request's.
        history = repair_tool_pairing([m for m in upto if m.get("role") not in SYSTEM_ROLES])
        for name in strategies:
            if name == "threadline":
                view = requests[step - 1]
            elif name == "naive":
                view = naive_view(system, history, window)
            else:
                view = await codex.advance(history)
            await _probe(model, view, expected, tallies[name], args, f"step-{step}/{name}")
    if args.out is not None:
        for i, (request, summary) in enumerate(codex.summaries, 1):
            _keep(args.out / f"codex-style-summary-{i}.json", {"messages": request, "answer": summary})
    return _result(points, goals, tallies, args.judge)


async def _probe(
    model: ProbeModel,
    view: list[dict[str, Any]],
    expected: Expected,
    tally: Tally,
    args: argparse.Namespace,
    where: str,
) -> None:
    for probe in PROBES:
        request = [*view, {"role": "user", "content": QUESTIONS[probe]}]
        answer = await model.ask(request)
        tally.input_tokens += answer.input_tokens
        tally.output_tokens += answer.output_tokens
        value = score(probe, expected, answer.text)
        if value is not None:
            tally.scores[probe].append(value)
        kept: dict[str, Any] = {"messages": request, "answer": answer.text, "expected": expected.text(probe)}
        kept["score"] = value
        if args.judge and value is not None:
            judged = await _grade(model, probe, expected, answer.text, tally)
            if judged.grade is not None:
                tally.grades[probe].append(judged.grade)
            else:
                tally.judge_errors.append(f"{where} {probe}: {judged.error}")
            kept["judge"] = {"grade": judged.grade, "reply": judged.reply, "error": judged.error}
        if args.out is not None:
            _keep(args.out / f"{where}-{probe}.json", kept)


@dataclass(frozen=True)
class Judged:
    grade: int | None
    reply: str | None  # the judge's whole reply (None: the call failed)
    error: str | None  # why there is no grade


async def _grade(model: ProbeModel, probe: str, expected: Expected, answer: str, tally: Tally) -> Judged:
    """The model's 0-5 grade of ``answer``, its reply, and why there is no grade: the call failed, or the reply
    neither is nor states one (``judge_grade``). A failed judge costs its grade, not the run."""
    from server.probe_model import ModelFailed

    text = JUDGE_PROMPT.format(question=QUESTIONS[probe], expected=expected.text(probe), answer=answer)
    try:
        graded = await model.ask([{"role": "user", "content": text}])
    except ModelFailed as exc:
        return Judged(None, None, str(exc))
    tally.judge_input += graded.input_tokens
    tally.judge_output += graded.output_tokens
    grade = judge_grade(graded.text)
    if grade is None:
        return Judged(None, graded.text, f"the reply is not a grade from 0 to 5: {graded.text[:80]!r}")
    return Judged(grade, graded.text, None)


def _keep(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _mean(values: list[float] | list[int]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _result(points: list[int], goals: list[dict[str, Any]], tallies: dict[str, Tally], judge: bool) -> dict[str, Any]:
    result: dict[str, Any] = {
        "points": points,
        "goals": goals,
        "strategies": {
            name: {
                "probes": {p: {"score": _mean(t.scores[p]), "n": len(t.scores[p])} for p in PROBES},
                "inputTokens": t.input_tokens,
                "outputTokens": t.output_tokens,
            }
            for name, t in tallies.items()
        },
    }
    if judge:  # reported apart: a model's opinion, not the deterministic score
        result["judge"] = {
            name: {
                "probes": {p: {"grade": _mean(t.grades[p]), "n": len(t.grades[p])} for p in PROBES},
                "inputTokens": t.judge_input,
                "outputTokens": t.judge_output,
                "errors": t.judge_errors,
            }
            for name, t in tallies.items()
        }
    return result


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_table(result: dict[str, Any], out: TextIO) -> None:
    out.write(f"points (steps): {', '.join(map(str, result['points']))}\n")
    out.write(f"{'strategy':<12} {'probe':<9} {'score':>6} {'n':>3}" + ("  judge(0-5)" if "judge" in result else ""))
    out.write("\n")
    for name, s in result["strategies"].items():
        for probe, cell in s["probes"].items():
            line = f"{name:<12} {probe:<9} {_cell(cell['score']):>6} {cell['n']:>3}"
            if "judge" in result:
                line += f"  {_cell(result['judge'][name]['probes'][probe]['grade']):>10}"
            out.write(line + "\n")
    out.write("tokens spent (probes, and codex-style's summary calls):\n")
    for name, s in result["strategies"].items():
        out.write(f"  {name:<12} in {s['inputTokens']:>10,}  out {s['outputTokens']:>8,}\n")
    if "judge" in result:
        spent = [(j["inputTokens"], j["outputTokens"]) for j in result["judge"].values()]
        out.write(f"  judge        in {sum(i for i, _ in spent):>10,}  out {sum(o for _, o in spent):>8,}\n")
        errors = [f"{name} {e}" for name, j in result["judge"].items() for e in j["errors"]]
        if errors:
            out.write(f"judge gave no grade {len(errors)} times:\n")
            out.writelines(f"  {e}\n" for e in errors[:MAX_ERRORS_SHOWN])
            if len(errors) > MAX_ERRORS_SHOWN:
                out.write(f"  ... and {len(errors) - MAX_ERRORS_SHOWN} more (--out keeps every reply and error)\n")
    for goal in result["goals"]:
        where = f"message {goal['seq']}" if goal["seq"] is not None else "no message (nothing scored)"
        out.write(f"goal at step {goal['step']}: {where}: {_one_line(goal['text'])}\n")
    out.write(LEGEND)
    if "judge" in result:
        out.write(
            "  judge  the model's own 0-5 grade of the answer against the expected one, averaged; - when none. A\n"
            '         reply counts only when it is a grade or states one ("Grade: 4"); any other is listed as none.\n'
        )


def _one_line(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= width else flat[: width - 3] + "...", ensure_ascii=False)
