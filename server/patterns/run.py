"""Run an untrusted pattern job (regex search, glob, ``.gitignore`` walk) in a worker process with a deadline.

A thread is not enough: ``re`` keeps the GIL for the whole of one catastrophic match, so the event loop would
stop answering every client. The worker (``server.patterns.worker``) streams its results; at the deadline it
is killed and the results found so far are returned with ``timed_out`` set, for the caller to say so.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_LINE_CHARS = 10_000  # lines longer than this are searched in their first MAX_LINE_CHARS characters only
_MAX_ITEMS = 5000  # a worker never sends more; this bounds what a misbehaving one can make us hold
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
# The worker gets only what Python needs: never the provider key or anything else in the server's environment.
_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "SYSTEMROOT", "TMPDIR")


class ScanError(Exception):
    """The job was refused (an invalid regex) or the worker failed; the message says which."""


@dataclass
class ScanResult:
    items: list[Any] = field(default_factory=list)
    done: dict[str, Any] = field(default_factory=dict)
    timed_out: bool = False

    @property
    def long_lines(self) -> int:
        return int(self.done.get("longLines", 0))


async def run_scan(job: dict[str, Any], timeout: float = DEFAULT_TIMEOUT_SECONDS) -> ScanResult:
    """Run ``job`` in a fresh worker, killed after ``timeout`` seconds or when the caller is cancelled."""
    job = {"max_line_chars": MAX_LINE_CHARS, **job}
    env = {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.patterns.worker",
        str(os.getpid()),  # the worker dies with this process (``worker.die_with_parent``)
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=str(_PACKAGE_ROOT),
        limit=1 << 20,
    )
    result = ScanResult()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(job).encode())
        proc.stdin.close()
        try:
            async with asyncio.timeout(timeout):
                await _collect(proc.stdout, result)
        except TimeoutError:
            result.timed_out = True
    finally:
        if proc.returncode is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        await proc.wait()
    if not result.timed_out and not result.done:
        raise ScanError(f"the pattern worker stopped without an answer (exit status {proc.returncode})")
    return result


async def _collect(stdout: asyncio.StreamReader, result: ScanResult) -> None:
    while line := await stdout.readline():
        message = json.loads(line)
        if "item" in message and len(result.items) < _MAX_ITEMS:
            result.items.append(message["item"])
        elif "error" in message:
            raise ScanError(message["error"])
        elif "done" in message:
            result.done = message["done"] or {"complete": True}
            return


def timeout_note(timeout: float, what: str = "search") -> str:
    return (
        f"[{what} stopped after {timeout:g} s: the pattern took too long (a regex that backtracks "
        f"catastrophically, such as (a+)+$, can take forever); results above are partial. Simplify the pattern]"
    )


def long_lines_note(count: int) -> str:
    return f"[{count} lines longer than {MAX_LINE_CHARS} characters were searched in their first {MAX_LINE_CHARS} only]"
