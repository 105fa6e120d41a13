"""The worker process that runs untrusted patterns: regex searches, globs and ``.gitignore`` files.

Python's ``re`` holds the GIL for as long as one match runs, so ``(a+)+$`` against a long line would stop the
whole server, threads included. These jobs therefore run in this separate process, which the server kills at a
deadline (``server.patterns.run``). One JSON job on stdin; one JSON object per line on stdout: ``{"item": ...}`` for
each result as it is found (so a killed scan still leaves its partial results), then ``{"done": {...}}`` or
``{"error": "..."}``. Standard library and ``pathspec`` only; it never sees the server's environment secrets.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import resource
import signal
import sys
from pathlib import Path
from typing import Any

from server.patterns.walk import glob_matcher, read_regular, walk_files

MEMORY_LIMIT_BYTES = 2 * 1024 * 1024 * 1024  # a pattern or ignore file must not fill the machine's memory either


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class PatternError(Exception):
    pass


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise PatternError(f"Invalid regex: {exc}") from None


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def search_tree(job: dict[str, Any]) -> dict[str, Any]:
    """``search_files``: lines of files under ``base`` matching ``pattern`` (only the first ``max_line_chars``
    characters of each line are searched)."""
    regex = _compile(job["pattern"])
    root, base, cap = Path(job["root"]).resolve(), Path(job["base"]), job["max_line_chars"]
    matcher = glob_matcher(job["glob"]) if job.get("glob") else None
    found = long_lines = 0
    for path in walk_files(root, base, tuple(job.get("hidden") or ())):
        rel = _relative(root, path)
        if matcher is not None and not matcher(rel):
            continue
        data = read_regular(path, job["max_read_bytes"])
        if data is None or b"\x00" in data[:8192]:
            continue
        for no, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if len(line) > cap:
                long_lines += 1
                line = line[:cap]
            if regex.search(line):
                _emit({"item": f"{rel}:{no}: {line[:300]}"})
                found += 1
                if found > job["max_matches"]:
                    return {"longLines": long_lines}
    return {"longLines": long_lines}


def list_tree(job: dict[str, Any]) -> dict[str, Any]:
    """``list_files``: folder-relative paths under ``base`` matching the glob; at most ``max_items`` are sent."""
    root, base = Path(job["root"]).resolve(), Path(job["base"])
    matcher = glob_matcher(job["pattern"])
    names = sorted(
        r for r in (_relative(root, p) for p in walk_files(root, base, tuple(job.get("hidden") or ()))) if matcher(r)
    )
    for name in names[: job["max_items"]]:
        _emit({"item": name})
    return {"total": len(names)}


def search_artifact(job: dict[str, Any]) -> dict[str, Any]:
    """R-ART-2 search: ``{line, text, byteOffset}`` per matching line of one artifact file."""
    regex = _compile(job["pattern"])
    data = Path(job["path"]).read_bytes()
    cap, found, offset, long_lines = job["max_line_chars"], 0, 0, 0
    for no, raw in enumerate(data.split(b"\n"), 1):
        line = raw.decode("utf-8", errors="replace")
        if len(line) > cap:
            long_lines += 1
            line = line[:cap]
        if regex.search(line):
            _emit({"item": {"line": no, "text": line[:500], "byteOffset": offset}})
            found += 1
            if found >= job["limit"]:
                break
        offset += len(raw) + 1
    return {"longLines": long_lines}


JOBS = {"search": search_tree, "list": list_tree, "artifact": search_artifact}


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies (``PR_SET_PDEATHSIG``), so a worker stuck in a pattern or in the
    kernel never outlives a server killed with SIGKILL. A parent already gone before the call is
    caught by the ``getppid`` check."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    if parent and os.getppid() != parent:
        os._exit(1)


def main() -> int:
    die_with_parent(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 0)
    return run_job()


def run_job() -> int:
    """One job from stdin, its answer on stdout (in a spawned worker, or a fork of ``server.patterns.forkserver``)."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    job = json.loads(sys.stdin.read())
    try:
        done = JOBS[job["op"]](job)
    except PatternError as exc:
        _emit({"error": str(exc)})
        return 1
    except MemoryError:
        _emit({"error": "the pattern needed more memory than allowed"})
        return 1
    _emit({"done": done})
    return 0


if __name__ == "__main__":
    sys.exit(main())
