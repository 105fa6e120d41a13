"""Untrusted patterns (regexes, globs, ``.gitignore`` files) and the killable worker process that runs them."""

from server.patterns.answer import ScanError, ScanResult
from server.patterns.run import (
    DEFAULT_TIMEOUT_SECONDS,
    MAX_LINE_CHARS,
    long_lines_note,
    run_scan,
    timeout_note,
)

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_LINE_CHARS",
    "ScanError",
    "ScanResult",
    "long_lines_note",
    "run_scan",
    "timeout_note",
]
