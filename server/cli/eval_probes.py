"""The probes of ``threadline eval``: the questions, the expected answers and the scores. Pure.

At a point (a model call of the replayed session) the expected answers come from the transcript up to that call,
deterministically; bench/PROBES.md documents them and the scores:

- ``goal``: the task's first substantive request: the first user message that is not a bare command (``/mode``),
  a harness's tag block (``<command-name>``, ``<task-notification>``) or a bare go-ahead (``yes``, ``continue``);
  a message that is only tag blocks around a task (mini-swe-agent's ``<pr_description>``) is read inside its
  first block that is not a harness's note; ``Expected.goal_seq`` says which message it took;
- ``files``: the paths the write tools were called on (a tool whose name says write, edit, create, replace, patch,
  insert or apply, with a ``path``-like argument), the calls that failed left out (a failed edit changed nothing);
- ``failures``: every call that failed, by B-SUM-10's one rule (``server.context.failures.is_failure``), as its
  label (tool and key argument) and the output's telling line;
- ``state``: the last assistant message's text and tool calls (name and arguments).

Scores in [0, 1]: ``files`` is the recall of the expected paths (a path counts when the answer names it or its
file name); the others are the share of the expected text's key terms (file names and paths, identifiers, words
of an error message) the answer contains as whole words, case-insensitively (``check`` is not found in
``checkpoint``; punctuation around a term does not matter). A probe with nothing expected at a point (no file
written yet, nothing failed) is not scored there: ``n`` counts the points that were. A goal of fewer than
``MIN_GOAL_TERMS`` key terms is not scored by terms either (one term, "weather", made any answer that says it a
1.00): only the judge grades it.

The judge's reply is a grade only when it is one (``4``, ``4/5``) or states one (``Grade: 4``); any other reply
(a digit somewhere in prose or noise) is no grade (``judge_grade``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.context.failures import call_label, failure_telling, is_failure
from server.context.micro import content_text

__all__ = [
    "PROBES",
    "QUESTIONS",
    "Expected",
    "contains",
    "expected_answers",
    "judge_grade",
    "key_terms",
    "path_recall",
    "request_text",
    "score",
    "substantive",
]

PROBES = ("goal", "files", "failures", "state")
QUESTIONS = {
    "goal": "Stop working for a moment and answer from memory, without tools: what is the user's current goal?",
    "files": "Stop working for a moment and answer from memory, without tools: which files have been changed so "
    "far? List their paths.",
    "failures": "Stop working for a moment and answer from memory, without tools: what has failed so far, and why? "
    "Name the commands or tools and quote the error messages.",
    "state": "Stop working for a moment and answer from memory, without tools: what was the last thing you did "
    "(the last message and tool calls), and what is next?",
}
MAX_TERMS = 40  # the key terms scored per expected text: a long goal or a long failure list is sampled, in order
MIN_WORD = 4  # shorter plain words (the, was, not) say nothing about the session
MIN_GOAL_TERMS = 3  # a goal with fewer key terms says too little to score an answer by them (the judge still may)

_WRITE_TOOL = re.compile(r"write|edit|create|replace|patch|insert|apply", re.IGNORECASE)
_PATH_ARGS = ("path", "file_path", "filepath", "file", "filename", "target_file", "notebook_path")
_PATHISH = re.compile(r"[\w.\-]*[/\\][\w.\-/\\]+|[\w\-]+\.[A-Za-z][\w]{0,7}\b")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_STOP = frozenset(
    [
        "this",
        "that",
        "with",
        "from",
        "have",
        "what",
        "which",
        "when",
        "where",
        "there",
        "their",
        "they",
        "them",
        "then",
        "than",
        "were",
        "will",
        "would",
        "should",
        "could",
        "into",
        "onto",
        "about",
        "after",
        "before",
        "been",
        "being",
        "does",
        "done",
        "make",
        "made",
        "also",
        "only",
        "just",
        "more",
        "most",
        "some",
        "such",
        "your",
        "yours",
        "please",
        "need",
        "needs",
        "want",
        "wants",
        "like",
        "here",
        "very",
        "each",
        "other",
        "these",
        "those",
        "file",
        "files",
        "none",
        "true",
        "false",
        "null",
    ]
)


_BARE_COMMAND = re.compile(r"/[\w:.\-]+")
_TAG_BLOCK = re.compile(r"<([\w\-]+)(?:\s[^>]*)?>(.*?)</\1>", re.DOTALL)
# A harness's own notes, never the task: Claude Code's command and hook blocks, task notifications, reminders
_HARNESS_TAG = re.compile(r"command-|local-command|task-notification|system-reminder|bash-|user-prompt", re.I)
_GRADE_ALONE = re.compile(r"\W*([0-5])(?:\s*/\s*5)?\W*")
_GRADE_STATED = re.compile(r"\bgrade\b\W{0,4}(?:is\s+)?\**([0-5])(?:\s*/\s*5)?(?![\w]|\.\d)", re.IGNORECASE)
_GO_AHEADS = frozenset(["y", "yes", "n", "no", "ok", "okay", "continue", "go", "go on", "go ahead", "proceed", "do it"])
_GO_AHEADS |= frozenset(["thanks", "thank you", "done", "next", "retry", "try again", "sure", "yep"])


@dataclass(frozen=True)
class Expected:
    goal: str
    files: list[str]
    failures: str
    state: str
    goal_seq: int | None = None  # the message the goal was taken from (its seq, else its position from 1)

    def text(self, probe: str) -> str:
        return "\n".join(self.files) if probe == "files" else getattr(self, probe)


def _args(arguments: Any) -> Mapping[str, Any]:
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _calls(msg: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(id, name, arguments) of an assistant message's tool calls, in the OpenAI shape."""
    out = []
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        out.append((str(call.get("id", "")), str(fn.get("name", "")), fn.get("arguments", "")))
    return out


def _write_path(name: str, arguments: Any) -> str | None:
    if not _WRITE_TOOL.search(name):
        return None
    args = _args(arguments)
    for key in _PATH_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def substantive(text: str) -> bool:
    """Whether a user message is a request: not empty, not a bare ``/command``, not only a harness's tag blocks,
    not a bare go-ahead."""
    text = text.strip()
    if not text or _BARE_COMMAND.fullmatch(text):
        return False
    if not _TAG_BLOCK.sub("", text).strip():
        return False
    return re.sub(r"[^\w\s]", "", text).strip().lower() not in _GO_AHEADS


def request_text(text: str) -> str | None:
    """The request a user message makes, or None: its text when substantive; for a message that is only tag
    blocks, the text inside the first block that is not a harness's note (mini-swe-agent sends its task as
    ``<pr_description>...</pr_description><instructions>...``), when that is substantive."""
    if substantive(text):
        return text.strip()
    if _TAG_BLOCK.sub("", text).strip():
        return None  # text outside the blocks, and not a request: a bare command or a go-ahead
    for block in _TAG_BLOCK.finditer(text):
        if not _HARNESS_TAG.match(block.group(1)) and substantive(block.group(2)):
            return request_text(block.group(2)) or block.group(2).strip()
    return None


def judge_grade(reply: str) -> int | None:
    """The judge's 0-5 grade: a reply that is one (``4``, ``4/5``, ``**4**``) or states one (``Grade: 4``, the
    same grade however often); None for any other reply, a digit in prose or noise included."""
    alone = _GRADE_ALONE.fullmatch(reply)
    if alone:
        return int(alone.group(1))
    stated = {int(m.group(1)) for m in _GRADE_STATED.finditer(reply)}
    return stated.pop() if len(stated) == 1 else None


def expected_answers(transcript: Sequence[Mapping[str, Any]]) -> Expected:
    """The expected answers after ``transcript`` (the messages up to a point, in the pipeline's shape)."""
    results = {str(m.get("tool_call_id")): content_text(m.get("content")) for m in transcript if m["role"] == "tool"}
    goal, state = "", ""
    goal_seq: int | None = None
    files: list[str] = []
    failures: list[str] = []
    for position, msg in enumerate(transcript, 1):
        if goal_seq is None and msg["role"] == "user" and (asked := request_text(content_text(msg.get("content")))):
            goal, goal_seq = asked, int(msg.get("seq") or position)
        if msg["role"] != "assistant":
            continue
        calls = _calls(msg)
        lines = [content_text(msg.get("content")).strip()] + [f"{n} {a}" for _, n, a in calls]
        state = "\n".join(line for line in lines if line)
        for call_id, name, arguments in calls:
            result = results.get(call_id)
            failed = result is not None and is_failure(result, name)
            if failed:
                failures.append(f"{call_label(name, arguments)}: {failure_telling(result or '')}")
            path = _write_path(name, arguments)
            if path and not failed and path not in files:
                files.append(path)
    return Expected(goal, files, "\n".join(failures), state, goal_seq)


def key_terms(text: str) -> list[str]:
    """The terms of ``text`` an answer should contain, lower-cased, first seen first, at most MAX_TERMS: paths and
    file names, then identifiers (dotted, snake_case, camelCase or with digits), then plain words of MIN_WORD+
    letters that are not stop words."""
    paths = [m.group(0).strip("./\\") for m in _PATHISH.finditer(text)]
    idents, words = [], []
    for m in _IDENT.finditer(text):
        token = m.group(0)
        if "." in token or "_" in token or any(c.isdigit() for c in token) or token[1:] != token[1:].lower():
            idents.append(token)
        elif len(token) >= MIN_WORD and token.lower() not in _STOP:
            words.append(token)
    seen: dict[str, None] = {}
    for term in paths + idents + words:
        if term and term.lower() not in seen:
            seen[term.lower()] = None
    return list(seen)[:MAX_TERMS]


def contains(answer: str, term: str) -> bool:
    """Whether ``answer`` holds ``term`` as a whole word, case-insensitively: not inside a longer word or
    identifier (``check`` is not in ``checkpoint``), whatever punctuation stands around it."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(term.lower())}(?![A-Za-z0-9_])", answer.lower()) is not None


def path_recall(expected: list[str], answer: str) -> float:
    """The share of ``expected`` paths the answer names, whole or by their file name (as whole words)."""
    hits = sum(1 for p in expected if contains(answer, p) or contains(answer, re.split(r"[/\\]", p)[-1]))
    return hits / len(expected)


def score(probe: str, expected: Expected, answer: str) -> float | None:
    """The score of ``answer`` to ``probe`` in [0, 1]; None when nothing is expected (the point is not scored)."""
    if probe == "files":
        return path_recall(expected.files, answer) if expected.files else None
    terms = key_terms(expected.text(probe))
    if not terms or (probe == "goal" and len(terms) < MIN_GOAL_TERMS):
        return None
    return sum(1 for t in terms if contains(answer, t)) / len(terms)
