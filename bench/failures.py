"""Section 4's failure lines: precision and informativeness of the summary's ``Failures to avoid:`` lines on every
recorded session, before and after B-SUM-10.

Every tool result of a recording is fed to each rule, as the summary's fold feeds it; the distinct lines each rule
would write are judged against oracles written apart from ``server/context/failures.py``:

- *failed*: the recording's own format says the call failed (``<returncode>N</returncode>`` / ``Exit code N`` /
  ``Command exited with code N`` with N != 0, Claude Code's ``<tool_use_error>`` and rejections, pi's edit or write
  result that is not ``Successfully ...``, an aborted call, our ``Tool failed`` / denials).
- *names the command*: a line from a failed shell command holds the command's first word and the start of its
  second (``cd DIR &&`` skipped), at the line's shown length.
- *quoted by its telling line*: for a failed call whose output is longer than a line can show (240 characters), the
  quote after the call starts like one of the output's lines that reads as an error (error, failed, assert,
  exception, not found, cannot, denied, ...), not like its first characters.

*Before* is the rule this replaced, as ``bench/legacy.py`` reads it from commit b10667b (the error-evidence regex and
excerpt were unchanged from then until B-SUM-10: any output mentioning an error word in its first or last 800
characters, quoted from its start or from the first evidence line); *after* is ``server.context.summary``'s fold. Lines are measured as the summary shows
them: whole (240 characters, the latest 4) and cut (80, older ones).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.legacy import load_legacy
from server.context.failures import fit_failure
from server.context.micro import content_text
from server.context.summary_state import SummaryState, summary_feed

LENGTHS = (240, 80)
SHELL_TOOLS = frozenset({"bash", "run_command", "shell"})
_CD = re.compile(r"^\s*cd\s+\S+\s*(?:&&|;)\s*")
_ERRORISH = re.compile(
    r"error|fail|assert|exception|not found|cannot|could not|can't|no such|denied|invalid|fatal|panic|refused|"
    r"unable|×|expected|missing|no module|undefined|timed out|not a git|no upstream|ignored",
    re.I,
)
_WRAPPER = re.compile(r"^(?:Exit code -?\d+|<returncode>-?\d+</returncode>|</?output>|exit -?\d+:?)\s*", re.I)


def failed_by_format(tool: str, text: str, status: str | None = None) -> bool:
    """The oracle: did the recording's own format say this call failed?"""
    if status in ("error", "denied"):
        return True
    head = text.lstrip()
    if head.startswith(("[no tool result recorded", "Tool failed", "Tool call interrupted", "Permission denied")):
        return True
    if head.startswith(("<tool_use_error>", "The user doesn't want to proceed", "Forbidden")):
        return True
    for pattern in (
        r"\A\s*<returncode>(-?\d+)</returncode>",
        r"\AExit code (-?\d+)",
        r"Command exited with code (-?\d+)\s*\Z",
    ):
        found = re.search(pattern, text)
        if found:
            return found.group(1) != "0"
    return tool in ("edit", "write") and not head.startswith("Successfully")  # pi's edit and write results


def _command(args: str) -> list[str]:
    try:
        command = json.loads(args).get("command", "")
    except (ValueError, AttributeError):
        return []
    while _CD.match(command):
        command = _CD.sub("", command, count=1)
    return command.split()[:2]


def names_command(line: str, words: list[str]) -> bool:
    if not words:
        return True
    return words[0] in line and (len(words) < 2 or f"{words[0]} {words[1][:3]}" in line)


def _quote(line: str) -> str:
    """What a line quotes: the text after its call (``Tool(argument): `` or ``Tool: ``), without an exit code."""
    head, sep, rest = line.partition(": ")
    if "(" in head and not head.endswith(")"):  # the call's argument holds ": "
        _, sep, rest = line.partition("): ")
    quote = rest if sep else line
    return _WRAPPER.sub("", _WRAPPER.sub("", quote.strip())).strip()


def quotes_telling_line(line: str, text: str) -> bool:
    quote = _quote(line).rstrip("…")[:30]
    if len(quote) < 8:
        return False
    error_lines = [" ".join(raw.split()) for raw in text.splitlines() if _ERRORISH.search(raw)]
    # a quote may join an error line with the next (an assertion and its code): it starts like the error line
    return any(c.startswith(quote) or quote in c or (len(c) >= 8 and quote.startswith(c[:30])) for c in error_lines)


def _before_lines(msgs: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(240-line, 80-line, result index) per tool result the rule this replaced recorded as a failure."""
    micro, summary = load_legacy("micro"), load_legacy("summary")
    names: dict[str, str] = {}
    out = []
    for i, msg in enumerate(msgs):
        if msg.get("tool_calls"):
            names = {c["id"]: c["function"]["name"] for c in msg["tool_calls"]}
        elif msg["role"] == "tool":
            match = micro.evidence_match(content_text(msg.get("content")))
            if match is not None:
                whole = f"{names.get(msg['tool_call_id'], 'tool')}: {summary._failure_excerpt(match)}"
                line = whole if len(whole) <= 240 else whole[:239].rstrip() + "…"
                out.append((line, line if len(line) <= 80 else line[:79].rstrip() + "…", i))
    return out


def _after_lines(msgs: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    state, out = SummaryState(), []
    for i, msg in enumerate(msgs):
        if msg["role"] == "tool":  # what this result adds, even when it repeats the latest failure word for word
            added = summary_feed(replace(state, failures=()), msg).failures
            if added:
                out.append((fit_failure(*added[0][:2], 240), fit_failure(*added[0][:2], 80), i))
        state = summary_feed(state, msg)
    return out


def measure(path: Path) -> dict[str, Any]:
    """Both rules' distinct failure lines on one recording, judged (see the module doc)."""
    msgs = json.loads(path.read_text(encoding="utf-8"))
    calls: dict[str, tuple[str, str]] = {}
    result_call: dict[int, tuple[str, str]] = {}
    for i, msg in enumerate(msgs):
        for c in msg.get("tool_calls") or ():
            calls[c["id"]] = (c["function"]["name"], c["function"]["arguments"])
        if msg["role"] == "tool":
            result_call[i] = calls.get(msg["tool_call_id"], ("tool", "{}"))
    failed_results = [
        i for i, (name, _) in result_call.items() if failed_by_format(name, content_text(msgs[i].get("content")))
    ]
    out: dict[str, Any] = {"failed_calls": len(failed_results)}
    for rule, lines in (("before", _before_lines(msgs)), ("after", _after_lines(msgs))):
        distinct = {whole: (short, i) for whole, short, i in lines}  # the summary shows a repeated line once
        recorded = len(set(failed_results) & {i for _, _, i in lines})
        r = {"lines": len(distinct), "from_failed": 0, "commands": 0, "long": 0, "recorded": recorded}
        r.update({f"named_{n}": 0 for n in LENGTHS} | {f"telling_{n}": 0 for n in LENGTHS})
        for whole, (short, i) in distinct.items():
            name, args = result_call[i]
            text = content_text(msgs[i].get("content"))
            if not failed_by_format(name, text):
                continue
            r["from_failed"] += 1
            shown = {240: whole, 80: short}
            if name.lower() in SHELL_TOOLS:
                r["commands"] += 1
                for n in LENGTHS:
                    r[f"named_{n}"] += names_command(shown[n], _command(args))
            if len(text) > 240:
                r["long"] += 1
                for n in LENGTHS:
                    r[f"telling_{n}"] += quotes_telling_line(shown[n], text)
        out[rule] = r
    return out


def bench_failures(files: list[Path]) -> dict[str, dict[str, Any]]:
    return {path.name: measure(path) for path in files}


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def pooled(failures: dict[str, dict[str, Any]], rule: str) -> dict[str, int]:
    total: dict[str, int] = {}
    for r in failures.values():
        for key, value in r[rule].items():
            total[key] = total.get(key, 0) + value
    return total


def failure_section(failures: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown for section 4's failure lines (see the module doc)."""
    lines = [
        "### Failure lines: precision and informativeness (B-SUM-10, issue 36)",
        "",
        "Every distinct line each rule would write in `Failures to avoid:` for every tool result of each recording "
        "(what any summary of it can show), judged by the recording's own failure signals (`bench/failures.py`): "
        "*recorded* counts the failed calls a rule wrote a line for; "
        "*precision* is the share of lines that come from calls that failed; *names the command* the share of lines "
        "from failed shell commands that hold the command's first words; *telling line* the share of failed calls "
        "with outputs over 240 characters whose quote starts like one of the output's error lines (not its first "
        "characters). Shown whole (240 characters, the latest 4) / cut (80, older lines). *Before*: the "
        "error-evidence rule this replaced; *after*: B-SUM-10.",
        "",
        "| trajectory | failed calls | recorded (before / after) | lines (before / after) | precision (before / after) | names the command, "
        "240 / 80 (before → after) | telling line, 240 / 80 (before → after) |",
        "| --- | ---: | --- | --- | --- | --- | --- |",
    ]
    rows = [(name.split("__")[0], r) for name, r in failures.items()]
    rows.append(
        (
            "**pooled**",
            {
                "failed_calls": sum(r["failed_calls"] for r in failures.values()),
                "before": pooled(failures, "before"),
                "after": pooled(failures, "after"),
            },
        )
    )
    for name, r in rows:
        b, a = r["before"], r["after"]
        lines.append(
            f"| {name} | {r['failed_calls']} | {b['recorded']} / {a['recorded']} | {b['lines']} / {a['lines']} | "
            f"{_pct(b['from_failed'], b['lines'])} / {_pct(a['from_failed'], a['lines'])} | "
            f"{_pct(b['named_240'], b['commands'])} / {_pct(b['named_80'], b['commands'])} → "
            f"{_pct(a['named_240'], a['commands'])} / {_pct(a['named_80'], a['commands'])} | "
            f"{_pct(b['telling_240'], b['long'])} / {_pct(b['telling_80'], b['long'])} → "
            f"{_pct(a['telling_240'], a['long'])} / {_pct(a['telling_80'], a['long'])} |"
        )
    a = rows[-1][1]["after"]
    checks = [
        ("failure lines from failed calls >= 95%", a["from_failed"], a["lines"], 0.95),
        ("command failures name the command >= 90% (cut to 80)", a["named_80"], a["commands"], 0.90),
        ("long failing outputs quoted by their telling line >= 80% (cut to 80)", a["telling_80"], a["long"], 0.80),
    ]
    lines += [
        "",
        "Issue 36 targets, pooled, after: "
        + "; ".join(
            f"{label}: {_pct(part, whole)} ({'met' if whole and part >= need * whole else 'not met'})"
            for label, part, whole, need in checks
        )
        + ".",
    ]
    return lines


if __name__ == "__main__":  # .venv/bin/python -m bench.failures: print the section
    from bench.common import TRAJECTORIES

    print("\n".join(failure_section(bench_failures(sorted(TRAJECTORIES.glob("*.json"))))))
