"""What counts as a failure, and what its line in the summary says (SPEC B-SUM-10, R-MICRO-2).

``is_failure`` is the one decision the summary's ``Failures to avoid:`` section, microcompaction (what stays
verbatim) and the bench's and ``getContextView``'s counts of kept failures share. A failure is a call that failed:

- the tool's own failure status (``error`` or ``denied``: our tools, MCP ``isError``, an import's ``is_error``);
- a non-zero exit code as the transcript records it: Claude Code's leading ``Exit code 2``, mini-swe-agent's
  ``<returncode>1</returncode>``, pi's trailing ``Command exited with code 1``, our ``command exited with code 1``
  and ``[exit code 1]``; a recorded exit code of 0 is a success whatever the output says;
- a file write whose result lists the editor diagnostics it introduced (``INTRODUCED_MARKER``), while
  they persist: ``clears_editor_failures`` tells a later write of the file that left it with no error or warning;
- an output that starts with an error marker: a traceback, ``fatal:``, ``Error:``, ``<tool_use_error>``, a denial,
  an interrupted or aborted call.

Never a successful read, listing, search or sub-agent report because its content mentions an error: for those
tools (``_QUIET_TOOLS``) only the status and the markers no file or report starts with count. Content is only looked
at where a failure announces itself (the first line, the last lines), so a 100 kB build log costs little.

``call_label`` and ``failure_telling`` give what the line says: the call (tool name and key argument) and the output's telling line
(a traceback's last line, an assertion, an error message), wherever it stands. ``fit_failure`` cuts the two to a
length so both survive. Pure and deterministic (R-SUM-3).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from protocol.tool_facts import named
from protocol.wire_text import PLACEHOLDER_PREFIX

__all__ = [
    "CLEAN_NOTE",
    "INTRODUCED_MARKER",
    "RESOLVED_MARKER",
    "call_label",
    "clears_editor_failures",
    "editor_failure",
    "failure_telling",
    "fit_failure",
    "is_failure",
    "telling_line",
]

# A file write whose result carries this line caused errors or warnings the editor reports
# (``server.grounding.edits``): the write succeeded but the code it left does not, so the call counts as a failure.
INTRODUCED_MARKER = "Editor diagnostics introduced by this edit"
# The errors and warnings a write made go away; with CLEAN_NOTE in its header the file has none left, so the
# failures earlier writes of that file introduced no longer persist (the summary drops them, B-SUM-10).
RESOLVED_MARKER = "Editor diagnostics resolved by this edit"
CLEAN_NOTE = "no errors or warnings remain in this file"


def editor_failure(text: str) -> bool:
    """True when this write result lists editor diagnostics the write introduced."""
    return f"\n{INTRODUCED_MARKER} (" in text


def clears_editor_failures(text: str) -> bool:
    """True when this write result says the file has no error or warning left (and it introduced none)."""
    return f"\n{RESOLVED_MARKER} (" in text and f"; {CLEAN_NOTE}):" in text and not editor_failure(text)


FAILED_STATUSES = frozenset({"error", "denied"})
# Tools whose successful output is someone else's text (a file, a listing, search hits, a sub-agent's report):
# that text may start with anything, so only their status and our own failure wording count. Ours declare it
# (``protocol.tool_facts``, result "quoted"); the others are other agents' tools, met in trajectories.
_QUIET_TOOLS = named(result="quoted") | frozenset(
    {
        "read",
        "view",
        "ls",
        "glob",
        "grep",
        "search",
        "agent",
        "taskoutput",
        "webfetch",
        "websearch",
        "notebookread",
        "read_many_files",
    }
)
_REJECTED = "The user doesn't want to proceed"  # Claude Code: the user rejected the call
# Prefixes only a failed or refused call starts with, in every format we store or import.
_FAILED_PREFIXES = (
    "Tool failed",
    "Tool call interrupted",
    "Permission denied",
    "Forbidden",
    "<tool_use_error>",
    "[no tool result recorded",
    _REJECTED,
)
# Exit codes as each format records them: at the start of the output, or on one of its last lines.
_HEAD_EXIT = re.compile(r"\A\s*(?:Exit code (-?\d+)\b|<returncode>\s*(-?\d+)\s*</returncode>)")
_TAIL_EXIT = re.compile(
    r"^(?:Command exited with code (-?\d+)|\[exit code (-?\d+)[\],])\s*\Z|\A\s*Tool failed: command exited with code (-?\d+)",
    re.M,
)
# Error markers an output may start with (its first non-blank line), for tools other than the quiet ones.
_MARKER_START = re.compile(
    r"""\A\s*(?:
        Traceback\ \(most\ recent\ call\ last\)
        | (?:fatal|error|panic)(?:\[[\w-]+\])?:
        | Error\b | ERROR\b
        | [A-Z]\w*(?:Error|Exception)\b
        | Could\ not\b | Cannot\b | Failed\ to\b | No\ such\ file\b
        | (?:bash|sh|zsh):\ .*(?:command\ not\ found|No\ such\ file|Permission\ denied)
    )""",
    re.X,
)
TAIL_WINDOW = 400  # characters at the end of an output searched for a trailing exit code


def _exit_code(text: str) -> int | None:
    """The exit code the output records (start or end), or None when it records none."""
    head = _HEAD_EXIT.match(text)
    if head:
        return int(head.group(1) or head.group(2))
    for where in (text[:200], text[-TAIL_WINDOW:]):
        found = _TAIL_EXIT.search(where)
        if found:
            return int(next(g for g in found.groups() if g is not None))
    return None


def is_failure(text: str, tool: str | None = None, status: str | None = None) -> bool:
    """True when this tool result comes from a call that failed (B-SUM-10; see the module doc). ``tool``: the
    called tool's name, when known; ``status``: the stored tool status (``ok``/``error``/``denied``), when known."""
    if status in FAILED_STATUSES:
        return True
    if editor_failure(text):
        return True
    if text.startswith(PLACEHOLDER_PREFIX):
        return False
    stripped = text.lstrip()
    if stripped.startswith(_FAILED_PREFIXES):
        return True
    if tool is not None and tool.lower() in _QUIET_TOOLS:
        return False
    code = _exit_code(text)
    if code is not None:
        return code != 0
    return _MARKER_START.match(text) is not None


# --- what the line says ------------------------------------------------------------------------------------

# Argument keys that say what a call was about, most telling first.
_KEY_ARGS = (
    "command",
    "cmd",
    "file_path",
    "path",
    "notebook_path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
    "task_id",
)
ARG_CHARS = 120  # how much of the key argument a stored call label keeps
_CD_PREFIX = re.compile(r"^\s*cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*(?:&&|;)\s*")
_SPACE = re.compile(r"\s+")


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def call_label(tool: str, arguments: Any) -> str:
    """``Tool(key argument)``: the called tool and what it was called on (a command's start without a leading
    ``cd DIR &&``, a path, a pattern); just the tool name when no key argument is found."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        args = None
    if isinstance(args, Mapping):
        for key in _KEY_ARGS:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                if key in ("command", "cmd"):
                    while _CD_PREFIX.match(value):
                        value = _CD_PREFIX.sub("", value, count=1)
                return f"{tool}({_clip(_one_line(value), ARG_CHARS)})"
    return tool


# Wrappers around the output itself, dropped before looking for the telling line.
_WRAPPER_LINE = re.compile(
    r"^(?:Exit code -?\d+|<returncode>\s*-?\d+\s*</returncode>|</?output>|Command exited with code -?\d+"
    r"|\[exit code -?\d+[^\]]*\]|Tool failed: command exited with code -?\d+|\(no output\))\s*$"
)
_TRACEBACK = "Traceback (most recent call last)"
# Lines that say what went wrong, best first. Within a class, the first in the output wins (a compiler's or a
# test runner's first error is the cause; later ones often follow from it), except after a traceback.
_STRONG = re.compile(
    r"""Assertion\ with\ .*\ failed | \bAssertionError\b | ^E\s{2,}\S | ^FAILED\ \S | ^\*\*\ \(\w
    | ^(?:fatal|error|panic)(?:\[[\w-]+\])?: | :\d+(?::\d+)?:?\s+(?:fatal\ )?error\b | ^×\s
    | ^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b:? | \bError:\s | \bcommand\ not\ found\b
    | \bNo\ such\ file\ or\ directory\b | \bCannot\ find\ module\b | \bcould\ not\b | \bcannot\b""",
    re.X | re.I,
)
_WEAK = re.compile(
    r"\b(?:error|errors|failed|failure|failures|unable\ to|invalid|denied|refused|undefined|missing|not\ found"
    r"|expected|timed\ out)\b",
    re.X | re.I,
)
_COUNT_LINE = re.compile(
    r"^(?:\d+\ (?:tests?|examples?),|Found\ \d+|npm\ (?:ERR!|error)\ |make:\ \*\*\*|=+\ .*\ (?:failed|error)"
    r"|\d+\ (?:failed|failures?|errors?)\b)",
    re.X | re.I,
)
_FRAME = re.compile(r"^(?:at\s|File\s\"|\d+\s*[│|]|[│└├┃])")
LONG_LINE_CHARS = 400  # longer lines are code or data echoed by the tool, not a message
SHORT_OUTPUT_LINES = 6  # an output this short with no error line says what happened in its first line
EXTRA_LINE_CHARS = 60  # a telling line shorter than this is followed by the next line (an assertion's code)


def _body_lines(text: str) -> list[str]:
    """The output's non-blank lines (indentation kept), without the exit-code and tag wrappers."""
    text = text.strip("\n")
    if text.lstrip().startswith("<tool_use_error>"):
        text = text.lstrip().removeprefix("<tool_use_error>").split("</tool_use_error>", 1)[0]
    return [line.rstrip() for line in text.splitlines() if line.strip() and not _WRAPPER_LINE.match(line.strip())]


def _traceback_line(lines: list[str]) -> int | None:
    """The exception line that ends the last traceback: the first unindented line after its frames."""
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith(_TRACEBACK)]
    if not starts:
        return None
    for i in range(starts[-1] + 1, len(lines)):
        if not lines[i].startswith((" ", "\t")):
            return i
    return None


def _pick(lines: list[str]) -> int | None:
    best: tuple[int, int] | None = None  # (rank, index); lower rank is better
    for i, raw in enumerate(lines):
        line = raw.strip()
        if _FRAME.match(line) or len(line) > LONG_LINE_CHARS:
            continue  # a stack frame, or minified code echoed with the error: not the message
        if _COUNT_LINE.match(line):
            rank = 3
        elif _STRONG.search(line):
            rank = 1
        elif _WEAK.search(line):
            rank = 2
        else:
            continue
        if best is None or rank < best[0]:
            best = (rank, i)
            if rank == 1:
                break
    return best[1] if best else None


def _fallback(lines: list[str]) -> int:
    """No error line: a short output's first line (git's "The following paths are ignored..."), a long one's last
    (where a command says how it stopped), never a ``hint:``."""
    order = range(len(lines)) if len(lines) <= SHORT_OUTPUT_LINES else range(len(lines) - 1, -1, -1)
    return next((i for i in order if not lines[i].lstrip().startswith("hint:")), order[0])


def telling_line(text: str) -> str:
    """The line(s) of a failed call's output that say what went wrong, on one line (not cut): a traceback's last
    line, an assertion (with the code it checked), an error message; else the output's last line."""
    lines = _body_lines(text)
    if not lines:
        return ""
    if text.startswith(_REJECTED):
        return _one_line(lines[-1])  # the user's reason when they gave one (``failure_telling`` says who rejected)
    chosen = _traceback_line(lines)
    if chosen is None:
        chosen = _pick(lines)
    if chosen is None:
        chosen = _fallback(lines)
    out = lines[chosen].strip()
    following = lines[chosen + 1].strip() if chosen + 1 < len(lines) else None
    if len(out) < EXTRA_LINE_CHARS and following is not None and not _FRAME.match(following):
        out = f"{out} {following}"
    return _one_line(out)


def failure_telling(text: str) -> str:
    """What a failed call's line quotes: its telling line, with the exit code when that line does not read as an
    error (``exit 1: The following paths are ignored...``), or just ``exit N`` for an output with no text."""
    telling = telling_line(text)
    if text.startswith(_REJECTED) and not telling.startswith(_REJECTED):
        return f"rejected by the user: {telling}"
    code = _exit_code(text)
    if code and not telling:
        telling = f"exit {code}"
    elif code and not (_STRONG.search(telling) or _WEAK.search(telling)):
        telling = f"exit {code}: {telling}"
    return telling


def fit_failure(call: str, telling: str, limit: int) -> str:
    """``call: telling`` in at most ``limit`` characters, cutting so both survive (B-SUM-8, B-SUM-10): the call
    keeps at least a third of the room, the telling line the rest."""
    if not telling:
        return _clip(call, limit)
    if len(call) + 2 + len(telling) <= limit:
        return f"{call}: {telling}"
    room = limit - 2
    call = _clip_call(call, max(room // 3, room - len(telling)))
    return f"{call}: {_clip(telling, room - len(call))}"


def _clip_call(call: str, room: int) -> str:
    """A call label in ``room`` characters, cut inside its parentheses (``Bash(mix test tes…)``) so it still
    reads as a call."""
    name, paren, arg = call.partition("(")
    if len(call) <= room or not paren or not arg.endswith(")") or room - len(name) - 2 < 4:
        return _clip(call, room)
    return f"{name}({_clip(arg[:-1], room - len(name) - 2)})"
