"""The context budget (B-BUDGET-1) on a scripted task, at windows up to 1M, beside the floor of its own transcript.

    .venv/bin/python -m bench.budget [--windows 32000,128000,200000,1000000] [--json OUT]

The task: sixty files of about 4,400 tokens each, read one at a time. Each window runs the real ``threadline exec``
(its own server process, its own store) against a stateless scripted model: the model reads file N+1 after the
highest file named anywhere in its request, and says done after the sixtieth. Each request the model receives is
priced as issue 52 fixes it: its segments are the tool definitions, then each message, each counted with the
o200k_base encoding (PyPI's ``bpe-openai``, offline) over its compact sorted JSON; its cached part is its longest
common prefix of whole segments with the previous request, at 0.1x; the rest at 1.0x. The floor prices the same
requests with every old output cleared right after the call that read it (an output is verbatim only in the request
that follows its call). A sweep of ``keep_recent_outputs`` and ``clear_at_least`` (and of a budget in tokens) gives
the trade-off the default is chosen from; ``--baseline`` adds the run without a budget (the window's threshold only).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from bench.budget_report import BENCH, write_section
from bench.common import REPO
from tests.fakes import fake_provider as fp

THREADLINE = REPO / ".venv" / "bin" / "threadline"
FILES = 60
FILE_TOKENS = 4_400
WINDOWS = (32_000, 128_000, 200_000, 1_000_000)
TASK = "Read the files in this folder one at a time, in order, then say done."
CACHED = 0.1
_NAMED = re.compile(r"file_(\d+)\.txt")
CLEARED = "[old tool output cleared]"
# The other agents on this task (issue 52: the real Codex CLI 0.171 and opencode, cost A, same model double)
OTHERS = {
    "codex": {128_000: 846_701, 200_000: 950_968, 1_000_000: 1_187_500},
    "opencode": {128_000: 755_134, 200_000: 868_397, 1_000_000: 1_155_039},
}


def _encoding() -> Any:
    import bpe_openai  # a bench/test extra: o200k_base offline

    return bpe_openai.get_encoding("o200k_base")


def _segment(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def file_text(k: int, enc: Any) -> str:
    """File k's text: plain code lines, about FILE_TOKENS o200k tokens as read_file shows them, naming no file."""
    lines: list[str] = []
    i = 0
    while True:
        lines.append(
            f"def step_{k}_{i}(value, scale={i % 7 + 1}):\n    return (value * scale + {i * 31 % 97}) % {k + 101}\n"
        )
        i += 1
        if i % 10 == 0:  # measured as read_file shows it: numbered lines
            numbered = "".join(f"{n + 1:>6}\t{line}" for n, line in enumerate("".join(lines).splitlines(keepends=True)))
            if len(enc.encode(numbered)) >= FILE_TOKENS:
                return "".join(lines)


def answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The stateless scripted model: read file N+1 after the highest file named anywhere in the request."""
    named = [int(n) for n in _NAMED.findall(json.dumps(messages))]
    n = max(named, default=0)
    if n >= FILES:
        return {"content": "done"}
    return {
        "tool_calls": [{"id": f"call_{n + 1:02d}", "name": "read_file", "arguments": {"path": f"file_{n + 1:02d}.txt"}}]
    }


class _Handler(fp._Handler):
    def _answer(self, body: dict[str, Any], record: dict[str, Any], tokens: int) -> None:
        fake = self.fake
        assert isinstance(fake, StatelessModel)
        with fake.lock:
            fake.bodies.append({"tools": body.get("tools") or [], "messages": body["messages"]})
        fp.ScriptedAnswer(self, record, body, answer(body["messages"]), tokens, 0).send()


class StatelessModel(fp.FakeProvider):
    def __init__(self) -> None:
        super().__init__(cache_style="none")
        self.lock = threading.Lock()
        self.bodies: list[dict[str, Any]] = []

    def _handler_class(self) -> type[fp.BaseHTTPRequestHandler]:
        return _Handler


def run_exec(window: int, context: dict[str, Any], workdir: Path) -> list[dict[str, Any]]:
    """One run of the task through ``threadline exec``; the requests the model received."""
    home = workdir / "home"
    home.mkdir()
    table = "".join(f"{k} = {json.dumps(v)}\n" for k, v in context.items())
    with StatelessModel() as model:
        (home / "config.toml").write_text(
            "max_iterations = 100\n"
            f'[provider]\nbase_url = "{model.url}"\nmodel = "gpt-5"\napi_key = "sk-bench"\n'
            f"context_window_tokens = {window}\n[context]\n{table}"
        )
        env = {"PATH": "/usr/bin:/bin", "THREADLINE_HOME": str(home)}
        run = subprocess.run(
            [str(THREADLINE), "exec", "--cwd", str(workdir / "files"), "--policy", "auto", TASK],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if run.returncode != 0:
            raise SystemExit(f"threadline exec failed ({run.returncode}): {run.stderr[-2000:]}")
        return list(model.bodies)


def floor_of(request: dict[str, Any]) -> dict[str, Any]:
    """The request with every tool output but those answering its last assistant message cleared."""
    messages = request["messages"]
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    cleared = [dict(m, content=CLEARED) if m.get("role") == "tool" and i < last else m for i, m in enumerate(messages)]
    return {"tools": request["tools"], "messages": cleared}


def cost(requests: list[dict[str, Any]], enc: Any) -> dict[str, float]:
    """Cost A: each request's common prefix of whole segments with the previous one at CACHED, the rest at 1.0."""
    counts: dict[str, int] = {}
    previous: list[str] = []
    total = cached_total = sent = 0.0
    peak = 0
    for request in requests:
        segments = [_segment(request["tools"]), *(_segment(m) for m in request["messages"])]
        sizes = []
        for s in segments:
            if s not in counts:
                counts[s] = len(enc.encode(s))
            sizes.append(counts[s])
        shared = 0
        while shared < min(len(segments), len(previous)) and segments[shared] == previous[shared]:
            shared += 1
        cached = sum(sizes[:shared])
        tokens = sum(sizes)
        total += CACHED * cached + (tokens - cached)
        cached_total += cached
        sent += tokens
        peak = max(peak, tokens)
        previous = segments
    return {
        "cost": round(total),
        "sent": round(sent),
        "cached": round(cached_total),
        "peak": peak,
        "requests": len(requests),
    }


def measure(window: int, context: dict[str, Any], enc: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tl-budget-") as tmp:
        work = Path(tmp)
        (work / "files").mkdir()
        for k in range(1, FILES + 1):
            (work / "files" / f"file_{k:02d}.txt").write_text(file_text(k, enc))
        requests = run_exec(window, context, work)
    got = cost(requests, enc)
    floor = cost([floor_of(r) for r in requests], enc)
    reads = sum(1 for r in requests if answer(r["messages"]).get("tool_calls"))
    return {"window": window, "context": context, **got, "floor": floor["cost"], "reads": reads}


DEFAULT: dict[str, Any] = {}  # [context] as shipped: budget = "auto"
SWEEP: list[dict[str, Any]] = [
    {"keep_recent_outputs": 3},
    {"keep_recent_outputs": 2},
    {"clear_at_least": 8_000},
    {"budget": 30_000},
    {"budget": 60_000},
]
BASELINE = {"budget": 100_000_000}  # no budget: only the window's threshold clears (as before B-BUDGET-1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS))
    parser.add_argument("--sweep", action="store_true", help="also the keep/clear_at_least/budget sweep at 128k")
    parser.add_argument("--baseline", action="store_true", help="also each window without a budget")
    parser.add_argument("--sessions", action="store_true", help="also the recorded sessions (bench.budget_sessions)")
    parser.add_argument("--from-json", action="store_true", help="only write RESULTS.md section 9 from the JSON")
    parser.add_argument("--json", type=Path, default=BENCH / "budget.json")
    args = parser.parse_args(argv)
    if args.from_json:
        write_section(NOTES)
        return 0
    enc = _encoding()
    rows = []
    for window in (int(w) for w in args.windows.split(",")):
        configs = (
            [DEFAULT] + ([BASELINE] if args.baseline else []) + (SWEEP if args.sweep and window == 128_000 else [])
        )
        for context in configs:
            row = measure(window, context, enc)
            rows.append(row)
            others = "  ".join(f"{name} {row['cost'] / by[window]:.2f}x" for name, by in OTHERS.items() if window in by)
            print(
                f"{window:>9,} {json.dumps(context):<34} cost {row['cost']:>9,}  floor {row['floor']:>9,}  "
                f"{row['cost'] / row['floor']:.2f}x floor  peak {row['peak']:>7,}  {others}",
                flush=True,
            )
    args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if args.sessions:
        from bench.budget_sessions import main as sessions_main

        sessions_main([])
    write_section(NOTES)
    return 0


NOTES = [
    "*How measured* (`.venv/bin/python -m bench.budget --baseline --sweep --sessions`, which writes this section; "
    "`--from-json` rewrites it from bench/budget.json and bench/budget_sessions.json). (a): sixty files of ~4,400 "
    "o200k tokens each as `read_file` shows them, read one at a time by a stateless scripted model (it reads file "
    "N+1 after the highest file named anywhere in its request) through the real `threadline exec`, its own server "
    "and store, model `gpt-5` (cache read 0.1x, write 1.0x from the price table). Each request the model received "
    "is priced as issue 52 fixes it: segments = the tool definitions, then each message, each counted with o200k_base "
    "(`bpe-openai`, offline) over its compact sorted JSON; cached = the common prefix of whole segments with the "
    "previous request, at 0.1x; the rest at 1.0x. The floor prices the same requests with every tool output but "
    "the last call's replaced by a fixed placeholder. The Codex CLI's and opencode's figures are issue 52's (the same "
    "task, model double and pricing). (b): each shared trajectory replayed through the real server (section 6's "
    "driver) and priced by section 6's meter (a prefix cache, OpenAI-like 0.1x/1.0x, our estimate), beside the "
    "codex-style anchor of section 6 (append until 90 % of the window, then a 2,000-token summary and the last "
    "quarter window). Retention counts the goals, failures and edited paths of the transcript so far that appear in "
    "each request. The fidelity guard: of the recorded assistant messages that repeat 60+ characters of an earlier "
    "tool output verbatim (text or call arguments), how many were answered from a request in which that stretch "
    "appears nowhere.",
    "",
    "*The trade-off and the default.* On the task at 128k (table (a)): keep 1 / clear_at_least 2,000 (auto) 1.02x "
    "the floor; clear_at_least 8,000 1.07x; a budget of 30,000 tokens 1.08x, of 60,000 1.34x; keep 2 1.41x; "
    "keep 3 1.58x; no budget 1.88x. Every output kept verbatim after a cleared one is written again at each break, "
    "so keep is what costs. The other side of the curve, quoting answers whose request lacked the quote (the "
    "pipeline alone over each recorded session at 1M, the same decisions as the replay): keep 1 spotter 12/80, "
    "mini-swe-agent 2/19, kimi-cli 0/38; keep 2 12/80, 5/19, 0/38; keep 3 15/80, 0/19, 0/38. Keeping more outputs "
    "does not buy fidelity here: the quoted outputs are files read many calls before the edit that quotes them "
    "(old_string copied from a read), not the last few. Naming a command's file arguments as mentions (so a file a "
    "later command names is kept longer) cut mini-swe-agent's 2 to 1 for +9 % of its cost and changed nothing on "
    "spotter; not kept. Default: auto, keep_recent_outputs 1, clear_at_least 2,000.",
    "",
    "*Targets.* (a) at most 0.5x the Codex CLI and opencode at 128k, 200k and 1M: 0.40x/0.45x, 0.36x/0.39x, "
    "0.29x/0.29x, met; within 1.25x of the floor at every window (1.15x at 32k): 1.02x at each, met (before: 1.15x, "
    "1.88x, 2.35x, 3.68x). (b) retention: every goal, failure and path, met; 1M within 15 % of 128k: met (the 1M "
    "rows are from after `planning_window_tokens`, which summarizes what clearing leaves as at 128k; before it "
    "pi-mono cost 9.46M at 1M against 3.18M at 128k; the 128k rows are unchanged by it); at most 0.5x the "
    "codex-style anchor: met at 1M on pi-mono (0.23x), not elsewhere (0.54x-0.85x: on these sessions the "
    "assistant's own words weigh as much as the tool outputs, and only outputs are cleared, while at 128k the "
    "anchor itself rarely compacts); at most 5 % of quoting answers from a request lacking the quote: met on "
    "kimi-cli (0), not on the others (table (b); see the trade-off above: the quoted outputs are files read long "
    "before the edit that copies from them).",
    "",
]


if __name__ == "__main__":
    raise SystemExit(main())
