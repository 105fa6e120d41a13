"""What a pattern worker answers, read back on the event loop (shared by a spawned and a forked worker)."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_MAX_ITEMS = 5000  # a worker never sends more; this bounds what a misbehaving one can make us hold
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
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


def worker_env() -> dict[str, str]:
    return {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}


async def collect_until(stdout: asyncio.StreamReader, result: ScanResult, timeout: float) -> None:
    try:
        async with asyncio.timeout(timeout):
            await collect(stdout, result)
    except TimeoutError:
        result.timed_out = True


async def collect(stdout: asyncio.StreamReader, result: ScanResult) -> None:
    while line := await stdout.readline():
        message = json.loads(line)
        if "item" in message and len(result.items) < _MAX_ITEMS:
            result.items.append(message["item"])
        elif "error" in message:
            raise ScanError(message["error"])
        elif "done" in message:
            result.done = message["done"] or {"complete": True}
            return
