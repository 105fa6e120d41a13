"""bench/RESULTS.md section 9 (B-BUDGET-1) from bench/budget.json (the scripted task, ``bench.budget``) and
bench/budget_sessions.json (the recorded sessions, ``bench.budget_sessions``); ``bench.run`` keeps it when it
rewrites the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
HEADING = "## 9. A budget, not a window (B-BUDGET-1, issue 52)"
OTHERS = {
    "codex": {128_000: 846_701, 200_000: 950_968, 1_000_000: 1_187_500},
    "opencode": {128_000: 755_134, 200_000: 868_397, 1_000_000: 1_155_039},
}
NO_BUDGET = {"budget": 100_000_000}


def _k(window: int) -> str:
    return f"{window // 1000}k" if window < 1_000_000 else f"{window // 1_000_000}M"


def _config(context: dict[str, Any]) -> str:
    if context == NO_BUDGET:
        return "no budget (threshold only, as before)"
    if not context:
        return "default (auto, keep 1, clear_at_least 2,000)"
    return ", ".join(f"{k} = {v:,}" if isinstance(v, int) else f"{k} = {v}" for k, v in context.items())


def task_lines(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "### (a) The sixty-file task through `threadline exec`, at every window",
        "",
        "| window | [context] | cost A | floor | vs floor | peak request | vs Codex CLI | vs opencode |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        w = r["window"]
        others = [f"{r['cost'] / by[w]:.2f}x" if w in by else "" for by in OTHERS.values()]
        out.append(
            f"| {_k(w)} | {_config(r['context'])} | {r['cost']:,} | {r['floor']:,} | {r['cost'] / r['floor']:.2f}x | "
            f"{r['peak']:,} | {' | '.join(others)} |"
        )
    return out


def session_lines(rows: dict[str, dict[str, Any]]) -> list[str]:
    out = [
        "### (b) Recorded sessions at 128k and 1M against a codex-style anchor",
        "",
        "| session | window | Threadline | codex-style | ratio | goals kept | failures kept | paths kept | quoting "
        "answers | of them lacking the quote |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    totals: dict[str, list[int]] = {}
    for name, per in sorted(rows.items()):
        for window, r in sorted(per.items(), key=lambda kv: int(kv[0])):
            s, total, f = r["strategies"], r["total"], r["fidelity"]
            now, codex = s["now"]["cost"]["openai"], s["codex"]["cost"]["openai"]
            kept = [f"{s['now']['kept'][k]}/{total[k]}" if total[k] else "n/a" for k in ("goals", "failures", "paths")]
            out.append(
                f"| {name} | {_k(int(window))} | {now:,} | {codex:,} | {now / codex:.2f}x | {' | '.join(kept)} | "
                f"{f['quoting']} | {f['lacking']} |"
            )
            t = totals.setdefault(str(window), [0, 0, 0, 0])
            t[0] += now
            t[1] += codex
            t[2] += f["quoting"]
            t[3] += f["lacking"]
    for window, (now, codex, quoting, lacking) in sorted(totals.items(), key=lambda kv: int(kv[0])):
        share = f"{100 * lacking / quoting:.1f}%" if quoting else "n/a"
        out.append(
            f"| **all** | {_k(int(window))} | {now:,} | {codex:,} | {now / codex:.2f}x | | | | {quoting} | "
            f"{lacking} ({share}) |"
        )
    return out


def budget_section(notes: list[str] | None = None) -> list[str]:
    """Section 8 from the JSON the two benches wrote (what is missing is left out)."""
    out = [HEADING, ""]
    task, sessions = BENCH / "budget.json", BENCH / "budget_sessions.json"
    if task.exists():
        out += [*task_lines(json.loads(task.read_text(encoding="utf-8"))), ""]
    if sessions.exists():
        out += [*session_lines(json.loads(sessions.read_text(encoding="utf-8"))), ""]
    out += notes or []
    return out


def write_section(notes: list[str]) -> None:
    """Replace section 9 of RESULTS.md (or add it at the end)."""
    path = BENCH / "RESULTS.md"
    text = path.read_text(encoding="utf-8")
    before = text.split(HEADING, 1)[0].rstrip("\n")
    path.write_text(before + "\n\n" + "\n".join(budget_section(notes)).rstrip("\n") + "\n", encoding="utf-8")
