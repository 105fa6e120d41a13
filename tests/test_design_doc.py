"""Docs/DESIGN.md defines every rule the code cites (the design is written down where the code is).

A rule ID (``R-TAIL-3``, ``B-CACHE-1``; ``R_TAIL_3`` in a test name) cited anywhere in server/, protocol/, tests/ or
bench/ must be defined in docs/DESIGN.md as a bold ``**ID**`` entry, so a newcomer can read what it means and why,
and a new rule is written down before it is cited.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.harness import REPO

DESIGN = REPO / "docs" / "DESIGN.md"
SCANNED = ("server", "protocol", "tests", "bench")
SKIPPED_DIRS = {"node_modules", "__pycache__", ".cache", ".hypothesis", ".pytest_cache"}
TEXT_SUFFIXES = {".py", ".md", ".json", ".toml", ".ts", ".js", ".lua", ".txt", ".sh"}
# R-/B- then an upper-case family then a number; "_" separators in test names. Not inside a longer word or number.
CITED = re.compile(r"(?<![A-Za-z0-9])([RB])[-_]([A-Z]{2,})[-_](\d+)(?![0-9])")
DEFINED = re.compile(r"\*\*([RB]-[A-Z]{2,}-\d+)\*\*")


def _cited() -> dict[str, set[str]]:
    """Every rule ID cited under SCANNED, with the files that cite it."""
    out: dict[str, set[str]] = {}
    for top in SCANNED:
        for folder, dirs, files in os.walk(REPO / top):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            for name in files:
                path = Path(folder, name)
                if path.suffix not in TEXT_SUFFIXES or path == Path(__file__):  # this file's examples are not citations
                    continue
                for match in CITED.finditer(path.read_text(encoding="utf-8", errors="replace")):
                    out.setdefault("-".join(match.groups()), set()).add(str(path.relative_to(REPO)))
    return out


def _defined() -> list[str]:
    return DEFINED.findall(DESIGN.read_text(encoding="utf-8"))


def test_every_cited_rule_is_defined_in_docs_design():
    cited, defined = _cited(), set(_defined())
    assert len(cited) > 30, "the scan found almost no rule IDs: is the pattern still right?"
    missing = {rule: sorted(files)[:3] for rule, files in sorted(cited.items()) if rule not in defined}
    assert not missing, f"rules cited but not defined in docs/DESIGN.md: {missing}"


def test_every_rule_is_defined_once():
    defined = _defined()
    twice = sorted({rule for rule in defined if defined.count(rule) > 1})
    assert not twice, f"defined more than once in docs/DESIGN.md: {twice}"


def test_the_scan_reads_test_names_and_docstrings():
    """The pattern itself: test-name and docstring forms count, longer words and numbers do not."""
    text = "def test_R_TAIL_3_x(): ... (R-SUM-2, B-CACHE-1..4) XR-SUM-2 R-SUM-22 B-64 R-sum-1"
    assert ["-".join(m.groups()) for m in CITED.finditer(text)] == ["R-TAIL-3", "R-SUM-2", "B-CACHE-1", "R-SUM-22"]
