"""How editor answers read to the model: capped lists with a count, UTF-16 columns, what an edit
introduced compared by content (not position), and the marker that makes a write a failure for the summary."""

from __future__ import annotations

from pathlib import Path

from protocol.editor import Diagnostic, Location, Position, Range
from server.context.failures import failure_telling, is_failure
from server.grounding.edits import introduced, introduced_text
from server.grounding.text import MAX_ITEMS, char_column, locations_text, utf16_offset


def at(line: int, character: int = 0) -> Range:
    return Range(start=Position(line=line, character=character), end=Position(line=line, character=character + 1))


def diag(path: Path, line: int, message: str, severity: int = 1) -> Diagnostic:
    return Diagnostic(uri=path.as_uri(), range=at(line), severity=severity, message=message)  # type: ignore[arg-type]


def test_issue34_columns_convert_between_characters_and_utf16():
    line = "s = '𝄞x'"  # the clef is two UTF-16 units
    assert utf16_offset(line, 6) == 7 and char_column(line, 7) == 6
    assert char_column(line, 0) == 0 and utf16_offset(line, 100) == len(line) + 1


def test_issue34_locations_are_capped_with_a_count_and_outside_ones_not_read(tmp_path):
    (tmp_path / "a.py").write_text("\n".join(f"line {n}" for n in range(100)))
    locations = [Location(uri=(tmp_path / "a.py").as_uri(), range=at(n)) for n in range(MAX_ITEMS + 7)]
    text = locations_text(tmp_path, "references", [Location(uri="file:///etc/hostname", range=at(0)), *locations])
    lines = text.splitlines()
    assert lines[0] == f"{MAX_ITEMS + 8} references:"
    assert lines[1:3] == ["/etc/hostname:1:1", "    (outside the session folder)"]
    assert lines[3:5] == ["a.py:1:1", "    line 0"] and lines[-1] == "… and 8 more"


def test_issue34_an_edit_introduces_only_what_is_new_by_content_and_only_errors_and_warnings(tmp_path):
    path = tmp_path / "m.py"
    before = [diag(path, 3, "old error"), diag(path, 9, "a hint", 4)]
    after = [diag(path, 5, "old error"), diag(path, 6, "old error"), diag(path, 1, "new info", 3)]
    assert [(d.range.start.line, d.message) for d in introduced(before, after)] == [(6, "old error")]
    assert introduced_text(tmp_path, []) == ""


def test_issue34_a_write_with_introduced_diagnostics_is_a_failure_with_a_telling_line(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = y\n")
    text = "Edited m.py" + introduced_text(tmp_path, [diag(path, 0, "undefined name 'y'")])
    assert is_failure(text, "edit_file", "ok") and not is_failure("Edited m.py", "edit_file", "ok")
    assert "m.py:1:1 error: undefined name 'y'" in failure_telling(text)
