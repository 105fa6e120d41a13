"""Run an untrusted pattern job (regex search, glob, ``.gitignore`` walk) in a worker process with a deadline.

A thread is not enough: ``re`` keeps the GIL for the whole of one catastrophic match, so the event loop would
stop answering every client. The worker (``server.patterns.worker``) streams its results; at the deadline it
is killed and the results found so far are returned with ``timed_out`` set, for the caller to say so. Workers are
forked by a warm fork server (``server.patterns.pool``; a spawned interpreter per search cost ~0.3 s)
and die with the server however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import Any

from server.patterns.answer import PACKAGE_ROOT, ScanError, ScanResult, collect_until, worker_env
from server.patterns.pool import FORK_SERVER
from server.sandbox.start import start

DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_LINE_CHARS = 10_000  # lines longer than this are searched in their first MAX_LINE_CHARS characters only


async def run_scan(job: dict[str, Any], timeout: float = DEFAULT_TIMEOUT_SECONDS) -> ScanResult:
    """Run ``job`` in a worker forked by the warm fork server (a freshly spawned one if that cannot be had),
    killed after ``timeout`` seconds or when the caller is cancelled."""
    job = {"max_line_chars": MAX_LINE_CHARS, **job}
    pool = FORK_SERVER.get()
    if pool is None:
        return await _spawned_scan(job, timeout)
    return await pool.scan(job, timeout)


async def _spawned_scan(job: dict[str, Any], timeout: float) -> ScanResult:
    proc = await start(  # unconfined (our own code), in a session of its own: exec's Ctrl-C is not its to get
        [sys.executable, "-m", "server.patterns.worker", str(os.getpid())],  # it dies with this process
        confine=None,
        contain=None,
        stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=worker_env(),
        cwd=str(PACKAGE_ROOT),
        limit=1 << 20,
    )
    result = ScanResult()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(job).encode())
        proc.stdin.close()
        await collect_until(proc.stdout, result, timeout)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
    if not result.timed_out and not result.done:
        raise ScanError(f"the pattern worker stopped without an answer (exit status {proc.returncode})")
    return result


def timeout_note(timeout: float, what: str = "search") -> str:
    return (
        f"[{what} stopped after {timeout:g} s: the pattern took too long (a regex that backtracks "
        f"catastrophically, such as (a+)+$, can take forever); results above are partial. Simplify the pattern]"
    )


def long_lines_note(count: int) -> str:
    return f"[{count} lines longer than {MAX_LINE_CHARS} characters were searched in their first {MAX_LINE_CHARS} only]"
