"""R-MICRO-2: the error-evidence search tries only the positions a match can start at; it must find exactly what
searching the whole text with ``ERROR_EVIDENCE`` finds (same span, same text), on real tool outputs and on
random texts built from the evidence words and the characters around them."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from server.context.micro import ERROR_EVIDENCE, _search, content_text
from tests.conftest import TRAJECTORIES

FRAGMENTS = [
    "fail",
    "FAILED",
    "0 failed",
    "Tool failed",
    "Permission denied",
    "denied",
    "error",
    "Error",
    "ERROR",
    "ValueError",
    "Exception",
    "fatal",
    "panic",
    "exit code 2",
    "exited with code 1",
    "exit status=0",
    "<returncode>1",
    "<returncode> -3",
    "<tool_use_error>",
    "[no tool result recorded",
    "Traceback (most recent call last)",
    "not found",
    "No such file",
    "cannot find",
    "refused",
    "timed out",
    "not allowed",
    "unauthorized",
    "invalid",
    "interrupted",
    "forbidden",
    "file.ts(3,4): error TS2",
    "x.py:12: error",
    "):",
    ":",
    ")",
    "(",
    "\n",
    "  ",
    "\t",
    "_",
    "a",
    "Z",
    "9",
    "0 ",
    "-",
    "=",
    "[E1]",
    "ſ",
    "İ",
    "ı",
    "\u212a",
    "é",
    "上",
]


def _old(text: str):
    lowered = text.lower()
    words = (
        "fail",
        "invalid",
        "denied",
        "forbidden",
        "interrupt",
        "error",
        "exception",
        "traceback",
        "fatal",
        "panic",
        "exit",
        "returncode",
        "not found",
        "no such file",
        "cannot find",
        "refused",
        "timed out",
        "not allowed",
        "unauthori",
        "no tool result",
    )
    return ERROR_EVIDENCE.search(text) if any(w in lowered for w in words) else None


def _same(text: str) -> None:
    new, old = _search(text), _old(text)
    found = (new.span(), new.group()) if new is not None else None
    expected = (old.span(), old.group()) if old is not None else None
    assert found == expected, text


def test_R_MICRO_2_evidence_search_equals_the_full_regex_on_real_tool_outputs():
    outputs = 0
    for path in sorted(TRAJECTORIES.glob("*.json")):
        for msg in json.loads(path.read_text(encoding="utf-8")):
            if msg.get("role") == "tool":
                text = content_text(msg.get("content"))
                for window in (text, text[:800], text[-800:]):
                    _same(window)
                outputs += 1
    assert outputs > 100


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_R_MICRO_2_evidence_search_equals_the_full_regex_on_random_texts(pieces):
    _same("".join(pieces))
