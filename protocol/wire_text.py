"""The fixed text compaction puts on the wire, defined once (R-MICRO-1, R-MICRO-3, R-SUM-2, R-OBS-1).

The server writes these into request views and ``contextCompacted`` summaries; clients (``server/cli``, the VS Code
extension through ``schema.json``'s ``wireText``) recognise compaction by them. Changing one is a protocol change.
"""

from __future__ import annotations

PLACEHOLDER_PREFIX = "[old tool output compacted: "  # a microcompacted tool output, R-MICRO-1
SUMMARY_MARKER = "[compressed conversation context]"  # the first line of every summary, R-SUM-2
SUMMARY_HEADER = f"{SUMMARY_MARKER}\nOlder transcript messages were summarized."  # its first two lines, R-SUM-2
MICROCOMPACTION_PREFIX = "[microcompaction]"  # a microcompaction's event summary, R-MICRO-3 / R-OBS-1


def placeholder(original_chars: int) -> str:
    """The text that replaces an old successful tool output of ``original_chars`` characters (R-MICRO-1)."""
    return f"{PLACEHOLDER_PREFIX}{original_chars} characters]"


def wire_text() -> dict[str, str]:
    """Every constant above under its camelCase name, for ``schema.json`` (and the editors generated from it)."""
    return {
        "placeholderPrefix": PLACEHOLDER_PREFIX,
        "summaryMarker": SUMMARY_MARKER,
        "summaryHeader": SUMMARY_HEADER,
        "microcompactionPrefix": MICROCOMPACTION_PREFIX,
    }
